"""The statements of a PostgreSQL append: one ``INSERT`` per batch that checks the writer's lease.

A fenced append is one statement (one transaction, one round trip): it renews the lease row *only
if it still holds the writer's token*, inserts the rows only from that renewal, and notifies
followers only then; it returns one row when it appended and none when the lease was lost, in
which case nothing was inserted. The renewal's row lock orders it against a takeover (which bumps
the token): an append either commits before the takeover or finds the new token.
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
        self._cache: dict[tuple[bool, int, bool, bool], bytes] = {}

    def insert(
        self,
        session: Sequence[Any] | None,
        rows: Sequence[Row],
        *,
        notify: str | None,
        fence: tuple[float, str, int] | None,
    ) -> tuple[bytes, list[Any]]:
        """One statement inserting ``session`` and ``rows``, notifying when ``notify`` is set; with
        ``fence`` (lease seconds, session id, token) only while the lease holds that token."""
        key = (session is not None, len(rows), notify is not None, fence is not None)
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
        if notify is not None:
            args += [self._channel, notify]
        return text, args

    @staticmethod
    def _text(session: bool, rows: int, notify: bool, fenced: bool) -> str:
        parts = [_LEASE] if fenced else []
        source = "SELECT v.* FROM l, (VALUES {}) v" if fenced else "VALUES {}"
        if session:
            parts.append(f"s AS (INSERT INTO {{schema}}.sessions {source.format(_SESSION_ROW)})")
        if rows:
            values = ", ".join([_EVENT_ROW] * rows)
            parts.append(f"e AS (INSERT INTO {{schema}}.events {source.format(values)})")
        final = "SELECT pg_notify(%s, %s)" if notify else "SELECT 1"
        return f"WITH {', '.join(parts)} {final}" + (" FROM l" if fenced else "")
