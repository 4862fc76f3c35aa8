"""Following a session live from another process: an async iterator of its new events (SPEC §6.5).

One API for both stores, read-only on both. On SQLite the follower watches the WAL's change
counter (the WAL-index header in ``-shm``, which every commit changes) and the main file's size
and modification time, and reads only when they change, re-reading every ``RESCAN_S`` seconds
regardless. On PostgreSQL the followers of a process share one listening connection per server
and one rescan every ``RESCAN_S`` seconds (:mod:`nbagent.store.postgres.listen`): a follower holds no
connection of its own, and reads through its process's pool only when its session moved. Events
come in seq order with no gap, each exactly once.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbagent.errors import SessionNotFoundError
from nbagent.log.events import Event
from nbagent.store.location import PostgresLocation, Where, parse_location
from nbagent.store.opening import open_reader

if TYPE_CHECKING:
    from nbagent.store.postgres.store import PostgresStore

POLL_S = 0.05
"""How often a SQLite follower looks at the change counter (a few bytes read, no query)."""
RESCAN_S = 2.0
"""How often a follower reads regardless of any sign of change."""
PAGE = 1000
WAL_INDEX_HEADER = 48
"""Bytes of ``-shm`` holding the WAL-index header (change counter, last frame, checksums)."""


async def follow_events(
    location: Where,
    session_id: str,
    *,
    after: int = -1,
    poll_interval: float = POLL_S,
) -> AsyncIterator[Event]:
    """Yield the events of ``session_id`` with ``seq > after`` as they are committed, until closed.

    ``location`` is a SQLite file path or a ``postgresql://`` URL. Events already stored come
    first, then each new one as soon as its batch commits. Stop by leaving the ``async for`` (or
    cancelling the task): the connections close. Read-only: creates and changes nothing. Raises
    :class:`~nbagent.errors.SessionNotFoundError` when the store holds no such session.
    """
    where = parse_location(location)
    store = await asyncio.to_thread(open_reader, where)
    try:
        if await asyncio.to_thread(store.session_row, session_id) is None:
            raise SessionNotFoundError(f"no session {session_id} in {store.location}; see list_sessions()")
        if isinstance(where, PostgresLocation):
            from nbagent.store.postgres.store import PostgresStore

            assert isinstance(store, PostgresStore)  # open_store's choice for a PostgresLocation
            changes = _notices(store, session_id)
        else:
            changes = _file_changes(where.path, poll_interval)
        try:
            async for _ in changes:
                while True:
                    batch = await asyncio.to_thread(store.events, session_id, start=after + 1, limit=PAGE)
                    for event in batch:
                        yield event
                    if batch:
                        after = batch[-1].seq
                    if len(batch) < PAGE:
                        break
        finally:
            await changes.aclose()
    finally:
        store.close()


def _change_token(path: Path) -> tuple[Any, ...]:
    """What every commit changes: the WAL-index header in ``-shm``, else the files' size and time."""
    marks: list[Any] = []
    for p in (path, Path(f"{path}-wal")):
        try:
            st = os.stat(p)
            marks.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            marks.append(None)
    try:
        with open(f"{path}-shm", "rb") as f:
            marks.append(f.read(WAL_INDEX_HEADER))
    except OSError:
        marks.append(None)
    return tuple(marks)


async def _file_changes(path: Path, poll_interval: float) -> AsyncGenerator[None, None]:
    """Yield once at the start, then whenever the file may hold new commits."""
    token: tuple[Any, ...] | None = None
    last = 0.0
    while True:
        now = time.monotonic()
        current = _change_token(path)
        if current != token or now - last >= RESCAN_S:
            token, last = current, now  # taken before the read, so a commit during it is seen next
            yield
        await asyncio.sleep(poll_interval)


async def _notices(store: PostgresStore, session_id: str) -> AsyncGenerator[None, None]:
    """Yield once the process's listener listens for ``session_id`` (nothing committed after that
    can be missed), then whenever its session may hold new events."""
    from nbagent.store.postgres.listen import Follower, listener_for

    listener = listener_for(store)
    me = Follower(store, session_id, RESCAN_S, asyncio.get_running_loop())
    listener.add(me)
    try:
        await me.ready.wait()
        while True:
            me.changed.clear()
            yield
            await me.changed.wait()
    finally:
        listener.discard(me)
