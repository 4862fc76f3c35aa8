"""A PostgreSQL session's one-writer lease: a row with an expiry and a fencing token (SPEC §6.5).

The ``leases`` table holds one row per session being written: the holder (host, process id and
that process's start time), a ``token`` that grows by one at every takeover, and ``expires_at``
(the server's clock). The writer renews it every :func:`renew_seconds` (one statement per process
for all its leases) and with every append; every append runs in one statement that renews the row
*only if it still holds its token* and inserts nothing otherwise (``PostgresStore.write``), so a
writer that lost its lease — frozen, partitioned, or simply outlived — can never append again.

Nothing here needs a database session: no advisory session lock, no ``SET``; every step is one
transaction, so it works through PgBouncer in transaction mode.

Taking a lease succeeds when there is no row, when the row has expired (a dead or frozen writer
elsewhere: within :func:`lease_seconds` of its last renewal), or at once when its holder is a dead
process on this host (a restarted kernel resumes without waiting) or a stale lease of this very
process that no live agent of it holds. Otherwise it raises :class:`SessionLockedError` naming the
holder and when its lease runs out.
"""

from __future__ import annotations

import os
import socket
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nbagent.errors import NbagentError, SessionLockedError
from nbagent.store.postgres.served import Served

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

LEASE_S = 15.0
"""How long a lease lasts past its last renewal (``NBAGENT_PG_LEASE_SECONDS`` overrides it): the
bound on taking over from a writer that died on another host or froze."""

LEASES_DDL = (
    "CREATE TABLE {schema}.leases (session_id text PRIMARY KEY, token bigint NOT NULL, host text NOT NULL, "
    "pid integer NOT NULL, started text NOT NULL, since timestamptz NOT NULL, expires_at timestamptz NOT NULL)"
)


def lease_seconds() -> float:
    """The lease's length: ``NBAGENT_PG_LEASE_SECONDS`` when set (at least 1 s), else :data:`LEASE_S`."""
    try:
        return max(1.0, float(os.environ.get("NBAGENT_PG_LEASE_SECONDS", "")))
    except ValueError:
        return LEASE_S


def renew_seconds() -> float:
    """How often a writer renews its leases: a third of their length (two renewals may fail)."""
    return lease_seconds() / 3


class LeaseStore(Protocol):
    """What a lease uses of its PostgreSQL store (:class:`nbagent.store.postgres.store.PostgresStore`)."""

    schema: str
    location: str
    key: str
    """The server and schema (what two stores of one process share a lease table by)."""
    tokens: dict[str, int]
    """The fencing token of each session this store holds the lease of (its appends check it)."""

    def run(self, fn: Callable[[psycopg.Connection[Any]], T], *, doing: str = ...) -> T: ...

    def q(self, text: str) -> bytes: ...


def process_started(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, from ``/proc``), ``""`` where there
    is no ``/proc``; ``None`` when no such process runs. With the pid it names one process, even
    after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass
    return ""


HOST = socket.gethostname()


def holder_name() -> str:
    """This process's identity, as its connections' ``application_name``."""
    return f"nbagent process {os.getpid()} on {HOST}"[:63]


_held: dict[tuple[str, str], RowLease] = {}
"""The leases this process holds (or is taking), by (store key, session id)."""
_held_lock = threading.Lock()

_TAKE = (
    "INSERT INTO {schema}.leases VALUES (%s, 1, %s, %s, %s, clock_timestamp(), "
    "clock_timestamp() + make_interval(secs => %s)) ON CONFLICT (session_id) DO UPDATE SET "
    "token = leases.token + 1, host = excluded.host, pid = excluded.pid, started = excluded.started, "
    "since = excluded.since, expires_at = excluded.expires_at WHERE leases.expires_at < clock_timestamp() "
    "RETURNING token"
)
_HOLDER = (
    "SELECT token, host, pid, started, since, extract(epoch FROM expires_at - clock_timestamp()) "
    "FROM {schema}.leases WHERE session_id = %s"
)
_TAKE_OVER = (
    "UPDATE {schema}.leases SET token = token + 1, host = %s, pid = %s, started = %s, "
    "since = clock_timestamp(), expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE session_id = %s AND token = %s RETURNING token"
)
_RENEW = (
    "UPDATE {schema}.leases SET expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE (session_id, token) IN (SELECT * FROM unnest(%s::text[], %s::bigint[])) RETURNING session_id"
)
_RELEASE = "DELETE FROM {schema}.leases WHERE session_id = %s AND token = %s"


def describe_holder(row: tuple[Any, ...] | None) -> str:
    """Who holds a lease, and until when unless it renews it."""
    if row is None:
        return "another writer"
    _, host, pid, _, since, left = row
    stamp = f" (since {since:%Y-%m-%d %H:%M:%S})" if since else ""
    runs_out = f"; its lease runs out in {max(0.0, float(left)):.0f} s unless that writer renews it"
    return f"process {pid} on {host}{stamp}{runs_out}"


def _stale(row: tuple[Any, ...]) -> bool:
    """Whether the holder is provably gone: a dead process on this host, or a lease of this very
    process that no live agent of it holds (the caller has reserved the key)."""
    _, host, pid, started, _, _ = row
    if host != HOST:
        return False
    now = process_started(pid)
    return now is None or (bool(started) and bool(now) and now != started) or pid == os.getpid()


class RowLease:
    """A session's one-writer lease in the ``leases`` table, renewed while held."""

    def __init__(self, store: LeaseStore, session_id: str) -> None:
        self.session_id = session_id
        self.store: LeaseStore | None = store
        self.lost = False
        self.token = 0
        key = (store.key, session_id)
        with _held_lock:
            other = _held.get(key)
            if other is not None:
                self.store = None
                raise self._refused(store, f"another agent of this process {os.getpid()} on {HOST}")
            _held[key] = self
        try:
            self.token = self._take(store)
        except BaseException:
            self.store = None
            with _held_lock:
                _held.pop(key, None)
            raise
        store.tokens[session_id] = self.token
        RENEWER.add(self)

    def _refused(self, store: LeaseStore, who: str) -> SessionLockedError:
        return SessionLockedError(
            f"session {self.session_id} in {store.location} is open for writing by {who}; close it "
            "there (agent.close() or %agent close) or stop that kernel, then try again"
        )

    def _take(self, store: LeaseStore) -> int:
        me = (HOST, os.getpid(), process_started(os.getpid()) or "")
        ttl = lease_seconds()
        sid = self.session_id
        for _ in range(5):  # each round loses only to another taker that changed the row meanwhile
            got = store.run(
                lambda c: c.execute(store.q(_TAKE), (sid, *me, ttl)).fetchone(), doing="writing to"
            )
            if got is not None:
                return int(got[0])
            row = store.run(lambda c: c.execute(store.q(_HOLDER), (sid,)).fetchone())
            if row is None:
                continue  # released meanwhile
            if not _stale(row):
                raise self._refused(store, describe_holder(row))
            args = (*me, ttl, sid, row[0])

            def take_over(c: psycopg.Connection[Any], a: tuple[Any, ...] = args) -> Any:
                return c.execute(store.q(_TAKE_OVER), a).fetchone()

            got = store.run(take_over, doing="writing to")
            if got is not None:
                return int(got[0])
        raise self._refused(store, "another writer taking it at the same moment")

    @property
    def held(self) -> bool:
        return self.store is not None and not self.lost

    def release(self) -> None:
        """Give the lease up (a server that cannot be reached lets it run out instead)."""
        store, self.store = self.store, None
        RENEWER.discard(self)
        if store is None:
            return
        with _held_lock:
            if _held.get((store.key, self.session_id)) is self:
                del _held[(store.key, self.session_id)]
        if store.tokens.get(self.session_id) == self.token:
            del store.tokens[self.session_id]
        try:
            store.run(
                lambda c: c.execute(store.q(_RELEASE), (self.session_id, self.token)), doing="writing to"
            )
        except NbagentError:
            pass  # unreachable: the row runs out, and a restarted kernel on this host takes it at once


class Renewer(Served["RowLease"]):
    """One daemon thread per process renewing every held lease, one statement per store key."""

    def __init__(self) -> None:
        super().__init__(weakref.WeakSet(), "nbagent lease renewer")

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._members:
                    self._cond.wait()
                self._cond.wait(renew_seconds())
                leases = [lease for lease in self._members if lease.held]
            self.renew(leases)

    @staticmethod
    def renew(leases: list[RowLease]) -> None:
        """Renew ``leases`` (one statement per store key); a lease another writer took is lost."""
        groups: dict[str, list[RowLease]] = {}
        for lease in leases:
            if lease.store is not None:
                groups.setdefault(lease.store.key, []).append(lease)
        for group in groups.values():
            store = group[0].store
            if store is None:
                continue
            try:
                kept = _renew(store, [lease.session_id for lease in group], [lease.token for lease in group])
            except NbagentError:
                continue  # the server is unreachable: the appends will tell
            for lease in group:
                if lease.session_id not in kept and lease.held:
                    lease.lost = True


def _renew(store: LeaseStore, ids: list[str], tokens: list[int]) -> set[str]:
    """Renew the leases ``ids`` holding ``tokens``; the ids still held."""
    text = store.q(_RENEW)
    return store.run(
        lambda c: {r[0] for r in c.execute(text, (lease_seconds(), ids, tokens)).fetchall()},
        doing="writing to",
    )


RENEWER = Renewer()
