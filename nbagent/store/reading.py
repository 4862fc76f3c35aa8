"""Strictly read-only access to session files, for other processes (the JupyterLab extension,
a second kernel, scripts) while a writer may be appending.

Nothing here writes: no schema, no file, no ``-wal``/``-shm`` is ever created, and a file that is
not an nbagent file is refused unchanged.
"""

from __future__ import annotations

import os

from nbagent.errors import SessionNotFoundError
from nbagent.log.events import Event
from nbagent.store.base import SessionRow
from nbagent.store.location import SqliteLocation, Where, parse_location
from nbagent.store.opening import open_reader


def list_sessions(path: Where) -> list[SessionRow]:
    """Metadata rows of every session in the file at ``path``, most recent activity first.

    A missing or empty file holds no session (``[]``). Read-only: safe while another process
    writes, and never creates or changes anything. Raises
    :class:`~nbagent.errors.SessionFileError` (naming the path) for a file nbagent cannot use.
    """
    location = parse_location(path)
    if isinstance(location, SqliteLocation) and not os.path.lexists(location.path):
        return []
    store = open_reader(location)
    try:
        return store.sessions()
    finally:
        store.close()


def read_events(
    path: Where, session_id: str, *, after: int = -1, limit: int | None = None
) -> tuple[Event, ...]:
    """The events of session ``session_id`` with ``seq > after``, in seq order (at most ``limit``).

    ``Event(seq, time, type, data)`` values with ``data`` plain JSON as stored. Page through a
    long log with ``after=<last seq seen>``; follow a live session by polling the same way.
    Read-only: safe while another process writes (a page is one consistent snapshot), and never
    creates schema, files or ``-wal``/``-shm``. Raises
    :class:`~nbagent.errors.SessionNotFoundError` when the file holds no such session and
    :class:`~nbagent.errors.SessionFileError` (naming the path) for a file nbagent cannot use.
    """
    store = open_reader(path)
    try:
        if store.session_row(session_id) is None:
            raise SessionNotFoundError(f"no session {session_id} in {store.location}; see list_sessions()")
        return tuple(store.events(session_id, start=max(after + 1, 0), limit=limit))
    finally:
        store.close()
