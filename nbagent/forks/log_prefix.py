"""Copying a prefix of one session's log into a new session: the store side of a fork (SPEC §11.1).

Within one store the rows are copied by the database itself (the backend's ``copy_within``: an
``INSERT … SELECT``), in the same transaction as the new session's row and its first own event, so
a fork is all or nothing and the rows never pass through Python. Into another store the rows are
read page by page from the source and written in one transaction at the destination; the source is
only read.
"""

from __future__ import annotations

from collections.abc import Sequence

from nbagent.store.base import EventRow, SessionStore, StoredSession, StoreReader, StoreWriter
from nbagent.store.copying import PAGE


def copy_prefix(
    src: StoreReader | SessionStore,
    dst: StoreWriter,
    parent: str,
    stop: int,
    session: StoredSession,
    own: Sequence[EventRow],
) -> None:
    """Create ``session`` in ``dst`` holding ``parent``'s rows with ``seq <= stop``, then ``own``.

    ``src`` and ``dst`` may be the same store (then the copy runs inside it)."""
    if src is dst:
        dst.copy_within(parent, stop, session, own)
        return
    rows: list[EventRow] = []
    while len(rows) <= stop:
        page = src.raw_rows(parent, start=len(rows), limit=min(PAGE, stop + 1 - len(rows)))
        if not page:
            break
        rows.extend(row._replace(session_id=session.id) for row in page)
    dst.write([*rows, *own], session=session)
