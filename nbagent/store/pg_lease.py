"""A PostgreSQL session's one-writer lease: a session-level advisory lock on the writer's connection.

A writer that dies releases it at once (its backend sees the connection close). A writer whose
connection died *silently* (a partition, a stalled proxy) leaves a backend that still holds the
lock until the server notices; the connection's keepalives bound that (:mod:`pg_watchdog`), and a
writer of the same process that finds its own stale backend holding the lease ends it at once:
the backend is named by the process and host recorded as its ``application_name``, and this
process holds no live lease on it.
"""

from __future__ import annotations

import hashlib
import os
import socket
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nbagent.errors import NbagentError, SessionLockedError

if TYPE_CHECKING:
    import psycopg


T = TypeVar("T")


class LeaseStore(Protocol):
    """What a lease uses of its PostgreSQL store (:class:`nbagent.store.postgres.PostgresStore`)."""

    schema: str
    location: str
    backend_pid: int | None
    broken: object
    """The error that broke the connection, or ``None``."""

    def run(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T: ...


LEASE_WAIT_MS = 300
"""How long taking a lease waits for a holder whose connection is closing (a killed writer)."""
STALE_WAIT_MS = 5000
"""How long it waits for the lock once it has ended a stale backend of its own process."""

_live: weakref.WeakSet[AdvisoryLease] = weakref.WeakSet()
"""The leases this process holds: a backend of one of them is never stale."""


def lock_key(schema: str, session_id: str) -> int:
    """The advisory-lock key of one session: 64 bits of a hash of the schema and the session id."""
    digest = hashlib.blake2b(f"{schema}\0{session_id}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def holder_name() -> str:
    """This process's identity, recorded as a writer connection's ``application_name``."""
    return f"nbagent process {os.getpid()} on {socket.gethostname()}"[:63]


_HOLDER = (
    "SELECT l.pid, a.application_name, a.client_addr::text, a.backend_start "
    "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.classid::bigint = %s AND l.objid::bigint = %s LIMIT 1"
)


def holder_row(store: LeaseStore, key: int) -> tuple[Any, ...] | None:
    """``(backend pid, application_name, client address, backend start)`` of the lock's holder."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    return store.run(lambda c: c.execute(_HOLDER, (unsigned >> 32, unsigned & 0xFFFFFFFF)).fetchone())


def describe_holder(row: tuple[Any, ...] | None) -> str:
    """Who holds a lease, as far as this role may see."""
    if row is None:
        return "another connection"
    pid, app, addr, since = row
    who = app.removeprefix("nbagent ") if app and app.startswith("nbagent process") else None
    where = f" from {addr}" if addr and not who else ""
    stamp = f" (since {since:%Y-%m-%d %H:%M:%S})" if since else ""
    return f"{who or f'server backend {pid}'}{where}{stamp}"


class AdvisoryLease:
    """A session's one-writer lease: a session-level advisory lock on the writer's connection."""

    def __init__(self, store: LeaseStore, session_id: str) -> None:
        self.session_id = session_id
        self._store: LeaseStore | None = store
        self._key = lock_key(store.schema, session_id)
        self.backend: int | None = store.backend_pid
        if not store.run(lambda c: self._take(c, LEASE_WAIT_MS)) and not self._end_stale_holder(store):
            self._store = None
            raise SessionLockedError(
                f"session {session_id} in {store.location} is open for writing by "
                f"{describe_holder(holder_row(store, self._key))}; close it there (agent.close() or "
                "%agent close) or stop that kernel, then try again"
            )
        _live.add(self)

    def _take(self, conn: psycopg.Connection[Any], wait_ms: int) -> bool:
        """Lock, waiting up to ``wait_ms`` for a holder that is going away (a killed writer's
        backend notices its client is gone within moments); a live holder keeps it: False."""
        from psycopg import errors

        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = {int(wait_ms)}")
                conn.execute("SELECT pg_advisory_lock(%s)", (self._key,))
        except errors.LockNotAvailable:
            return False
        return True

    def _end_stale_holder(self, store: LeaseStore) -> bool:
        """If the holder is a backend of this process that no live lease of it uses (its connection
        died silently), end that backend and take the lease; ``True`` on success."""
        row = holder_row(store, self._key)
        if row is None or row[1] != holder_name():
            return False
        pid = row[0]
        if any(lease.held and lease.backend == pid for lease in list(_live)):
            return False  # another agent of this process holds it: a live holder
        try:
            ended = store.run(lambda c: c.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0])
        except NbagentError:
            return False  # not allowed to (another role's backend): the holder is named instead
        return bool(ended) and store.run(lambda c: self._take(c, STALE_WAIT_MS))

    @property
    def held(self) -> bool:
        return self._store is not None and not self._store.broken

    def release(self) -> None:
        _live.discard(self)
        store, self._store = self._store, None
        if store is None or store.broken:
            return  # a lost connection took the lock with it
        try:
            store.run(lambda c: c.execute("SELECT pg_advisory_unlock(%s)", (self._key,)))
        except NbagentError:
            pass  # the connection is gone, and the lock with it
