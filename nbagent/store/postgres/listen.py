"""One ``LISTEN`` per PostgreSQL server per process, fanned out to every follower in it (SPEC §6.5).

Every append ``NOTIFY``s its schema's channel with the session id. A process — a kernel, or the
Jupyter server — holds one listening connection per server on one daemon thread, however many
sessions it follows, and wakes exactly the followers of the session named. Beside it, a bounded
rescan: every ``rescan`` seconds (the shortest any follower asked for) one query per schema reads
the last seq of every followed session and wakes those that moved, so a notice lost with a
connection is found within that bound.

``LISTEN`` needs a session, which a pooler in transaction mode cannot give: behind PgBouncer the
listener connects to ``NBAGENT_PG_LISTEN_URL`` when set (the server itself, or a session-mode entry
of the pooler); without it, it relies on the rescan alone, every :data:`POLL_S`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbagent.store.postgres.location import split_schema
from nbagent.store.postgres.served import Served

if TYPE_CHECKING:
    import psycopg

    from nbagent.store.postgres.store import PostgresStore

LISTEN_URL_ENV = "NBAGENT_PG_LISTEN_URL"
POLL_S = 0.1
"""How often the followers of a process are rescanned when there is no listening connection."""
WAIT_S = 0.1
"""How long the listener waits for notices before it looks at new followers and the clock."""
RETRY_S = 1.0
"""How long it waits before connecting again after it lost its listening connection."""


@dataclass(eq=False)
class Follower:
    """One follower of one session: ``changed`` is set when the session may hold new events."""

    store: PostgresStore
    session_id: str
    rescan_s: float
    loop: asyncio.AbstractEventLoop
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the listener listens on its channel (or knows it cannot): reading may start."""
    last: int | None = None

    def wake(self, *, ready: bool = False) -> None:
        def both() -> None:
            self.changed.set()
            if ready:
                self.ready.set()

        try:
            self.loop.call_soon_threadsafe(both)
        except RuntimeError:
            pass  # its loop is closed: it is gone


class Listener(Served[Follower]):
    """The listening thread of one server (``conninfo``) in this process."""

    def __init__(self, conninfo: str, pooler: bool) -> None:
        override = os.environ.get(LISTEN_URL_ENV, "").strip()
        self.listen_conninfo = split_schema(override)[1] if override else None if pooler else conninfo
        super().__init__(set(), "nbagent listener")
        self.listening: set[str] = set()
        self.connections = 0
        """How many listening connections it has opened (one while all goes well)."""

    def ready_sessions(self) -> list[str]:
        """The session ids of the followers whose first read is settled (listening, or told to
        rescan): one entry per follower, for those who wait on it (benchmarks, tests)."""
        with self._cond:
            return [f.session_id for f in self._members if f.ready.is_set()]

    # -- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        retry_at = 0.0
        last_rescan = time.monotonic()
        while True:
            conn, followers = self._await_followers(conn)
            now = time.monotonic()
            if conn is None and self.listen_conninfo is not None and now >= retry_at:
                conn = self._connect()
                if conn is None:
                    retry_at = now + RETRY_S
                else:
                    self._wake_all(followers)  # notices may have been missed while it was away
            channels = {f.store.channel for f in followers}
            try:
                if conn is not None:
                    self._listen(conn, channels - self.listening, followers)
                    self._deliver(conn, followers)
                else:
                    self._poll(followers)
            except Exception:
                if conn is not None:
                    conn.close()
                conn, self.listening, retry_at = None, set(), time.monotonic() + RETRY_S
                self._wake_all(followers)
            bound = POLL_S if conn is None else min(f.rescan_s for f in followers)
            if time.monotonic() - last_rescan >= bound:
                last_rescan = time.monotonic()
                self._rescan(followers)

    def _await_followers(
        self, conn: psycopg.Connection[Any] | None
    ) -> tuple[psycopg.Connection[Any] | None, list[Follower]]:
        """Wait until some session is followed; the listening connection is closed while none is."""
        with self._cond:
            while not self._members:
                if conn is not None:
                    conn.close()
                    conn, self.listening = None, set()
                self._cond.wait()
            return conn, list(self._members)

    def _poll(self, followers: list[Follower]) -> None:
        """No listening connection: followers are ready at once, and the rescan is all there is."""
        for f in followers:
            if not f.ready.is_set():
                f.wake(ready=True)
        with self._cond:
            self._cond.wait(POLL_S)

    def _connect(self) -> psycopg.Connection[Any] | None:
        import psycopg

        from nbagent.store.postgres.lease import holder_name

        assert self.listen_conninfo is not None  # called only when there is a listening address
        try:
            conn = psycopg.connect(
                self.listen_conninfo, autocommit=True, connect_timeout=10, application_name=holder_name()
            )
        except psycopg.Error:
            return None
        self.connections += 1
        self.listening = set()
        return conn

    def _listen(self, conn: psycopg.Connection[Any], new: set[str], followers: list[Follower]) -> None:
        from psycopg import sql

        for channel in sorted(new):
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.listening.add(channel)
        for f in followers:
            if not f.ready.is_set() and f.store.channel in self.listening:
                f.wake(ready=True)

    def _deliver(self, conn: psycopg.Connection[Any], followers: list[Follower]) -> None:
        by_key: dict[tuple[str, str], list[Follower]] = {}
        for f in followers:
            by_key.setdefault((f.store.channel, f.session_id), []).append(f)
        for notice in conn.notifies(timeout=WAIT_S):
            for f in by_key.get((notice.channel, notice.payload), ()):
                f.wake()

    @staticmethod
    def _wake_all(followers: list[Follower]) -> None:
        for f in followers:
            f.wake(ready=f.ready.is_set())

    @staticmethod
    def _rescan(followers: list[Follower]) -> None:
        """One query per schema: the last seq of each followed session; wake those that moved."""
        by_store: dict[str, list[Follower]] = {}
        for f in followers:
            by_store.setdefault(f.store.key, []).append(f)
        for group in by_store.values():
            try:
                last = group[0].store.last_seqs(sorted({f.session_id for f in group}))
            except Exception:
                continue  # unreachable: the next rescan tries again
            for f in group:
                seq = last.get(f.session_id)
                if seq != f.last:
                    f.last = seq
                    f.wake(ready=f.ready.is_set())


_listeners: dict[str, Listener] = {}
_lock = threading.Lock()


def listener_for(store: PostgresStore) -> Listener:
    """This process's listener of ``store``'s server."""
    with _lock:
        found = _listeners.get(store.conninfo)
        if found is None:
            found = _listeners[store.conninfo] = Listener(store.conninfo, store.pool.pooler)
        return found
