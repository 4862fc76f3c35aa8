"""Copying a prefix of one session's log into a new session: the store side of a fork (SPEC §11.1).

Within one store the rows are copied by the database itself (``INSERT … SELECT``), in the same
transaction as the new session's row and its first own event, so a fork is all or nothing and the
rows never pass through Python. Into another store the rows are read page by page from the source
and written in one transaction at the destination; the source is only read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nbagent.store.base import Row, SessionStore
from nbagent.store.copying import PAGE


def copy_prefix(
    src: SessionStore,
    dst: SessionStore,
    parent: str,
    stop: int,
    session: tuple[Any, ...],
    own: Sequence[Row],
) -> None:
    """Create ``session`` in ``dst`` holding ``parent``'s rows with ``seq <= stop``, then ``own``.

    ``src`` and ``dst`` may be the same store (then the copy runs inside it)."""
    from nbagent.store.postgres import PostgresStore
    from nbagent.store.sqlite import SessionFile

    if src is dst and isinstance(dst, SessionFile):
        _sqlite_copy(dst, parent, stop, session, own)
        return
    if src is dst and isinstance(dst, PostgresStore):
        _postgres_copy(dst, parent, stop, session, own)
        return
    child = session[0]
    rows: list[Row] = []
    while len(rows) <= stop:
        page = src.raw_rows(parent, start=len(rows), limit=min(PAGE, stop + 1 - len(rows)))
        if not page:
            break
        rows.extend((child, *row[1:]) for row in page)  # type: ignore[misc]
    dst.write([*rows, *own], session=session)


def _sqlite_copy(store: Any, parent: str, stop: int, session: tuple[Any, ...], own: Sequence[Row]) -> None:
    from nbagent.store.sqlite import _guard
    from nbagent.store.sqlite_schema import rollback

    def copy() -> None:
        conn = store.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)", session)
            conn.execute(
                "INSERT INTO events SELECT ?, seq, time, type, data, inbox_pending FROM events "
                "WHERE session_id = ? AND seq <= ? ORDER BY seq",
                (session[0], parent, stop),
            )
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", own)
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise

    with store.lock:
        _guard(store.path, "writing to", copy)


def _postgres_copy(store: Any, parent: str, stop: int, session: tuple[Any, ...], own: Sequence[Row]) -> None:
    q = store.statement

    def copy(c: Any) -> None:
        with c.transaction():
            c.execute(q("INSERT INTO {schema}.sessions VALUES (%s, %s, %s, %s, %s, %s, %s)"), session)
            c.execute(
                q(
                    "INSERT INTO {schema}.events SELECT %s, seq, time, type, data, inbox_pending "
                    "FROM {schema}.events WHERE session_id = %s AND seq <= %s ORDER BY seq"
                ),
                (session[0], parent, stop),
            )
            for row in own:
                c.execute(q("INSERT INTO {schema}.events VALUES (%s, %s, %s, %s, %s, %s)"), row)

    store.run(copy, doing="writing to")
