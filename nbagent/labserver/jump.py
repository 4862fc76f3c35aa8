"""Going to a turn of a long session without folding the rest of it: the window around turn ``N``
(``timeline?window=K&turn=N``), the turns after turn ``T`` (``window=K&after=T``, paging forwards
to the newest), and a bounded search over turn titles (``timeline?find=TEXT&after=T&limit=L``).

A turn's title is the first line of its first typed prompt (as the timeline names it,
:mod:`nbagent.views.timeline`). The search reads only ``turn/start`` and ``user/message`` rows,
through the store's index of event types, from the turn after ``after`` on; it stops at ``limit``
matches, or after :data:`SCAN_EVENTS` rows, :data:`SCAN_BYTES` bytes or :data:`SCAN_SECONDS`
seconds, and then says where to go on (``next``), so no request reads a whole long log.
"""

from __future__ import annotations

import time
from typing import Any

from nbagent.errors import SessionNotFoundError
from nbagent.labserver.sessions import Readable
from nbagent.labserver.window import last_turn, span, turn_number, turn_start
from nbagent.log.events import TURN_START, USER_MESSAGE
from nbagent.store.budget import Budget, bounded
from nbagent.store.opening import open_store
from nbagent.views.labels import describe_message
from nbagent.views.schema import TimelineBundle
from nbagent.views.text import clip
from nbagent.views.timeline import LINE_MAX

MAX_FIND = 200
"""Characters a search text may have."""
MAX_MATCHES = 100
"""Matches one search answer holds at most."""
SCAN_PAGE = 1000
"""Rows read per step of a search."""
SCAN_EVENTS = 200_000
SCAN_BYTES = 32 << 20
SCAN_SECONDS = 2.0
"""What one search request reads at most before it answers with ``next`` (where to go on)."""


def around(
    path: Readable, session_id: str, *, turn: int, turns: int, max_text: int | None, page: Budget
) -> TimelineBundle:
    """The bundle of ``turns`` turns around turn ``turn``: it in the middle, or as near as the
    session's first and last turns allow."""
    with bounded(page):
        last = _last(path, session_id)
        if turn > last:
            raise SessionNotFoundError(f"session {session_id} has no turn {turn} (it has {last})")
        first = max(1, min(turn - (turns - 1) // 2, last - turns + 1))
        until = first + turns if first + turns <= last else None
        return span(path, session_id, first=first, until=until, max_text=max_text)


def later(
    path: Readable, session_id: str, *, after: int, turns: int, max_text: int | None, page: Budget
) -> TimelineBundle:
    """The bundle of the ``turns`` turns after turn ``after`` (fewer at the log's end)."""
    with bounded(page):
        last = _last(path, session_id)
        if after >= last:
            raise SessionNotFoundError(f"session {session_id} has no turn after {after} (it has {last})")
        until = after + 1 + turns if after + 1 + turns <= last else None
        return span(path, session_id, first=after + 1, until=until, max_text=max_text)


def _last(path: Readable, session_id: str) -> int:
    store = open_store(path, "read")
    try:
        if store.session_row(session_id) is None:
            raise SessionNotFoundError(f"no session {session_id} in {store.location}; see list_sessions()")
        return last_turn(store, session_id)
    finally:
        store.close()


def find_turns(
    path: Readable, session_id: str, *, text: str, after: int, limit: int, budget: Budget
) -> dict[str, Any]:
    """The turns after turn ``after`` whose title holds ``text`` (case-insensitive), in turn order:
    ``{"matches": [{"turn", "title"}], "next": T | None, "turns": last}``. ``next`` is the last turn
    searched when the search stopped early (at ``limit`` matches or a bound): ask again with
    ``after=next`` to go on; ``None`` when it reached the session's end."""
    with bounded(budget):
        store = open_store(path, "read")
        try:
            if store.session_row(session_id) is None:
                raise SessionNotFoundError(
                    f"no session {session_id} in {store.location}; see list_sessions()"
                )
            return _scan(store, session_id, text.casefold(), after, limit, budget)
        finally:
            store.close()


def _read_row(ev: Any, turn: int, titled: bool, after: int) -> tuple[int, bool, str | None]:
    """What one ``turn/start`` or ``user/message`` row says: the turn being read, whether its title
    was seen, and the title this row gives (the turn's first typed prompt), if any."""
    if ev.type == TURN_START:
        return turn_number(ev), False, None
    if titled or turn <= after:
        return turn, titled, None
    label = describe_message(ev.data)
    if label.kind != "user":
        return turn, titled, None
    return turn, True, clip(label.first_line, LINE_MAX)


def _scan(store: Any, session_id: str, needle: str, after: int, limit: int, budget: Budget) -> dict[str, Any]:
    log_seq = store.tail(session_id)[0]
    last = last_turn(store, session_id)
    answer: dict[str, Any] = {"matches": [], "next": None, "turns": last}
    start = turn_start(store, session_id, after + 1, stop=log_seq) if after < last else None
    if start is None:
        return answer
    began = time.monotonic()
    turn, titled = after, True  # the turn being read, and whether its title was seen
    while start < log_seq:
        rows = store.events(
            session_id, start=start, stop=log_seq, types=[TURN_START, USER_MESSAGE], limit=SCAN_PAGE
        )
        if not rows:
            break
        for ev in rows:
            turn, titled, title = _read_row(ev, turn, titled, after)
            if title is not None and needle in title.casefold():
                answer["matches"].append({"turn": turn, "title": title})
                if len(answer["matches"]) >= limit:
                    answer["next"] = turn if turn < last else None
                    return answer
        start = rows[-1].seq + 1
        spent = budget.events >= SCAN_EVENTS or budget.bytes >= SCAN_BYTES
        if spent or time.monotonic() - began >= SCAN_SECONDS:
            # Go on with the turn being read when its title may be still to come (and that moves on).
            resume = turn if titled or turn - 1 <= after else turn - 1
            answer["next"] = resume if resume < last else None
            return answer
    return answer
