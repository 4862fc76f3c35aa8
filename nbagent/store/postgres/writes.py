"""The statements of a PostgreSQL append: one ``INSERT`` per batch that checks the writer's lease.

A fenced append is one statement (one transaction, one round trip): it renews the lease row *only
if it still holds the writer's token* and inserts the rows only from that renewal; it returns one
row when it appended and none when the lease was lost, in which case nothing was inserted. The
renewal's row lock orders it against a takeover (which bumps the token): an append either commits
before the takeover or finds the new token.

Followers are told afterwards, off the writer's path, by :class:`Notifier`: one thread per
process sends the notices of every append committed meanwhile in one transaction that does not
wait for its commit to be flushed. A ``NOTIFY`` holds a lock global to the server from its commit
until the commit is flushed, so a notifying append would wait for every other writer's flush
instead of sharing one (group commit). A notice lost with a connection costs a follower at most
its rescan.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from nbagent.store.base import Row

_LEASE = (
    "l AS (UPDATE {schema}.leases SET expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE session_id = %s AND token = %s RETURNING 1)"
)
_SESSION_ROW = "(%s, %s::bigint, %s, %s, %s, %s, %s)"
_EVENT_ROW = "(%s, %s::bigint, %s::bigint, %s, %s::json, %s::integer)"


class Statements:
    """Builds (and caches, by shape) the append statements of one schema."""

    def __init__(self, q: Callable[[str], bytes], channel: str) -> None:
        self._q = q
        self._channel = channel
        self._cache: dict[tuple[bool, int, bool], bytes] = {}

    def insert(
        self,
        session: Sequence[Any] | None,
        rows: Sequence[Row],
        *,
        fence: tuple[float, str, int] | None,
    ) -> tuple[bytes, list[Any]]:
        """One statement inserting ``session`` and ``rows``; with ``fence`` (lease seconds, session
        id, token) only while the lease holds that token (then no row comes back if it does not)."""
        key = (session is not None, len(rows), fence is not None)
        text = self._cache.get(key)
        if text is None:
            text = self._q(self._text(*key))
            if len(self._cache) < 64:
                self._cache[key] = text
        args: list[Any] = list(fence) if fence is not None else []
        if session is not None:
            args.extend(session)
        for row in rows:
            args.extend(row)
        return text, args

    @staticmethod
    def _text(session: bool, rows: int, fenced: bool) -> str:
        parts = [_LEASE] if fenced else []
        source = "SELECT v.* FROM l, (VALUES {}) v" if fenced else "VALUES {}"
        if session:
            parts.append(f"s AS (INSERT INTO {{schema}}.sessions {source.format(_SESSION_ROW)})")
        if rows:
            values = ", ".join([_EVENT_ROW] * rows)
            parts.append(f"e AS (INSERT INTO {{schema}}.events {source.format(values)})")
        return f"WITH {', '.join(parts)} SELECT 1" + (" FROM l" if fenced else "")


class Notifying(Protocol):
    """What the notifier uses of a store (:class:`nbagent.store.postgres.store.PostgresStore`)."""

    channel: str
    pool: Any
    """The process's pool of the store's server (``pool.SharedPool``): a closed store's last
    notices still go out."""


class Notifier:
    """One daemon thread per process sending the notices of committed appends, batched."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: dict[str, tuple[Notifying, set[str]]] = {}
        self._thread: threading.Thread | None = None

    def tell(self, store: Notifying, session_id: str) -> None:
        """Queue a notice that ``session_id`` of ``store``'s schema has new events."""
        with self._cond:
            entry = self._pending.get(store.channel)
            if entry is None:
                self._pending[store.channel] = (store, {session_id})
            else:
                entry[1].add(session_id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="nbagent notifier", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        from psycopg import sql

        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                pending, self._pending = self._pending, {}
            for channel, (store, ids) in pending.items():
                calls = sql.SQL(", ").join(
                    sql.SQL("pg_notify({}, {})").format(sql.Literal(channel), sql.Literal(sid)) for sid in ids
                )
                # No parameters: one simple query, one round trip; SET LOCAL ends with the transaction.
                text = sql.SQL("BEGIN; SET LOCAL synchronous_commit = off; SELECT {}; COMMIT").format(calls)
                try:
                    with store.pool.connection() as conn:
                        conn.execute(text)
                except Exception:
                    pass  # the followers' rescan finds what this notice would have said


NOTIFIER = Notifier()
