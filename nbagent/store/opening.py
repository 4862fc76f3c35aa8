"""Opening a store by its location: a SQLite file path, or a ``postgresql://`` URL."""

from __future__ import annotations

import os

from nbagent.store.base import Mode, SessionStore


def open_store(location: str | os.PathLike[str], mode: Mode) -> SessionStore:
    """Open the store at ``location`` (a SQLite file path, or a ``postgresql://`` URL) in ``mode``."""
    from nbagent.store.pg_location import is_postgres_url
    from nbagent.store.sqlite import SessionFile

    if is_postgres_url(location):
        from nbagent.store.postgres import PostgresStore

        return PostgresStore(str(location), mode=mode)

    return SessionFile(location, mode=mode)
