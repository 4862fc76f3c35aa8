"""Opening a store by its location: a SQLite file, or a PostgreSQL URL (:mod:`nbagent.store.location`).

The one place that picks a backend; everything above it holds a :class:`SessionStore` and catches
only nbagent's errors (:mod:`nbagent.errors`): a backend turns its driver's failures into those.
"""

from __future__ import annotations

from nbagent.store.base import Mode, SessionStore, StoreReader
from nbagent.store.location import PostgresLocation, Where, parse_location


def open_store(where: Where, mode: Mode) -> SessionStore:
    """Open the store at ``where`` (a location, a SQLite file path, or a ``postgresql://`` URL)."""
    location = parse_location(where)
    if isinstance(location, PostgresLocation):
        from nbagent.store.postgres.store import PostgresStore

        return PostgresStore(location, mode=mode)
    from nbagent.store.sqlite.store import SessionFile

    return SessionFile(location.path, mode=mode)


def open_reader(where: Where) -> StoreReader:
    """A strictly read-only connection to the store at ``where``: it creates and changes nothing."""
    return open_store(where, "read")
