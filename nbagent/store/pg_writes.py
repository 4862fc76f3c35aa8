"""The statements of a PostgreSQL append: one ``INSERT`` per batch that checks the writer's lease.

A fenced append is one statement (one transaction, one round trip): it renews the lease row *only
if it still holds the writer's token* and inserts the rows only from that renewal; it returns one
row when it appended and none when the lease was lost, in which case nothing was inserted. The
renewal's row lock orders it against a takeover (which bumps the token): an append either commits
before the takeover or finds the new token.

Followers are told afterwards, by a transaction of its own (:meth:`Statements.notice`) that does
not wait for its commit to be flushed: a ``NOTIFY`` holds a lock global to the server from its
commit until the commit is flushed, so a notifying append would wait for every other writer's
flush instead of sharing one (group commit). A notice lost with a connection costs a follower at
most its rescan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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
        self._notices: dict[str, bytes] = {}

    def notice(self, conn: Any, session_id: str) -> bytes:
        """A transaction that ``NOTIFY``s the channel with ``session_id`` without waiting for its
        flush (no parameters: sent as one simple query, one round trip, no session state)."""
        found = self._notices.get(session_id)
        if found is None:
            from psycopg import sql

            text = sql.SQL(
                "BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_notify({}, {}); COMMIT"
            ).format(sql.Literal(self._channel), sql.Literal(session_id))
            found = text.as_bytes(conn)
            if len(self._notices) < 4096:
                self._notices[session_id] = found
        return found

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
