"""The session tab's windows of turns: a long session's newest turns without folding its whole log,
and earlier turns a page at a time (``timeline?window=K`` and ``timeline?window=K&before=T``).

A fold may start at any *quiet point* of the log (a splice after which both queues were empty),
since the inbox is all a fold carries from one turn to the next that the tab shows. So the newest
``K`` turns are folded from the last quiet point before the ``K``-th last ``turn/start``, found by
a backward search of the stored rows; the session's last ``request/header`` (how pending items'
tokens are counted) and its ``session/forked`` event (a fork's lineage) are folded first when
they lie before that point. The turns' starts come from the store's index of event types.

A window follows the log as the whole-session fold does (:class:`~nbagent.labserver.sessions.
TimelineCache`): it is kept, and each poll folds only the new events, a page at a time; the
bundle's ``seq`` says how far, ``log_seq`` how long the log was when read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nbagent.errors import SessionNotFoundError
from nbagent.labserver.sessions import Readable, identity
from nbagent.log.events import REQUEST_HEADER, TURN_START, Event, TurnStart, parse_event
from nbagent.store.base import SessionStore
from nbagent.store.budget import Budget, bounded
from nbagent.store.opening import open_store
from nbagent.views import Timeline
from nbagent.views.schema import TimelineBundle, ViewNode
from nbagent.views.text import plural

FORKED = "session/forked"
QUIET_PAGE = 500
"""Rows read per step of the backward search for a quiet point."""
QUIET_ROWS = 200_000
"""Rows searched back at most; past them the fold starts at the beginning of the log."""


@dataclass
class Window:
    """A fold of the log from ``start`` on, showing the turns from ``first_turn`` on."""

    timeline: Timeline
    start: int
    """The first seq folded (after a quiet point), besides the early events."""
    first_turn: int
    cut: int
    """The seq of ``first_turn``'s ``turn/start`` (the log's length when there was no turn)."""
    turns: int
    """Turns in the log so far (numbered 1..turns)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def turn_start(store: SessionStore, session_id: str, turn: int, *, stop: int) -> int | None:
    """The seq of turn ``turn``'s ``turn/start`` (before ``stop``), or ``None``: a binary search
    over the store's index of event types (turns are numbered in log order), so a session of any
    length costs a few dozen one-row lookups."""
    low, high = 0, stop
    while low < high:
        mid = (low + high) // 2
        found = store.events(session_id, start=mid, stop=stop, types=[TURN_START], limit=1)
        number = turn_number(found[0]) if found else None
        if number is None or number > turn:
            high = mid
        elif number < turn:
            low = found[0].seq + 1
        else:
            return found[0].seq
    return None


def last_turn(store: SessionStore, session_id: str) -> int:
    """The number of the session's last turn (0 before its first)."""
    event = store.last_of_type(session_id, TURN_START)
    return 0 if event is None else turn_number(event)


def turn_number(event: Event) -> int:
    """The number a ``turn/start`` event opens (its typed record's)."""
    record = parse_event(event)
    return record.turn if isinstance(record, TurnStart) else 0


def quiet_before(store: SessionStore, session_id: str, seq: int) -> int:
    """The last seq before ``seq`` after which both queues were empty, or -1 (the log's start)."""
    low = seq
    while low > 0 and seq - low < QUIET_ROWS:
        low, high = max(0, low - QUIET_PAGE), low
        rows = store.raw_rows(session_id, start=low, limit=high - low)
        for row in reversed(rows):
            if row[5] == 0:
                return int(row[1])
    return -1


def _fold_start(store: SessionStore, session_id: str, cut: int) -> tuple[Timeline, int]:
    """A timeline ready to fold from the quiet point before ``cut``, and the seq to read from."""
    start = quiet_before(store, session_id, cut) + 1
    timeline = Timeline()
    before = [store.last_of_type(session_id, t) for t in (FORKED, REQUEST_HEADER)]
    early = sorted((ev for ev in before if ev is not None and ev.seq < start), key=lambda ev: ev.seq)
    timeline.feed(early)
    return timeline, start


def _subtree(nodes: list[ViewNode], low: int, high: int | None) -> list[ViewNode]:
    """The nodes whose top-level node has ``low <= seq < high`` (and ``forked``, always)."""
    keep: set[str] = set()
    out: list[ViewNode] = []
    for n in nodes:
        parent = n["parent"]
        if parent is None:
            inside = low <= n["seq"] and (high is None or n["seq"] < high)
            if not inside and n["type"] != "forked":
                continue
        elif parent not in keep:
            continue
        keep.add(n["id"])
        out.append(n)
    return out


def _bundle(window: Window, *, max_text: int | None, log_seq: int, high: int | None = None) -> TimelineBundle:
    bundle = window.timeline.to_json(max_text=max_text)
    bundle["nodes"] = _subtree(bundle["nodes"], window.cut, high)
    turns = max(window.turns, window.timeline.open_turn or 0, _last_turn(bundle["nodes"]))
    bundle["summary"] = f"{plural(turns, 'turn')} · {plural(log_seq, 'event')}"
    bundle["first_turn"] = window.first_turn
    bundle["log_seq"] = log_seq
    if window.start > 0:
        bundle["usage"] = None  # the totals of a part of the log would mislead
    return bundle


def _last_turn(nodes: list[ViewNode]) -> int:
    return max((int(n["turn"]) for n in nodes if n["type"] == "turn"), default=0)


class WindowCache:
    """The newest-turns windows of recently viewed sessions, keyed on the file's identity, the
    session and the window's size; each poll folds only new events."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], Window] = OrderedDict()
        self._lock = threading.Lock()

    def newest(
        self,
        path: Readable,
        session_id: str,
        *,
        turns: int,
        known: int | None,
        max_text: int | None,
        page: Budget,
    ) -> TimelineBundle | None:
        """The bundle of the newest ``turns`` turns (and every turn after them since), or ``None``
        while ``known`` is still its ``seq``. Events are read under ``page`` (a long tail is folded
        over several requests)."""
        key = (*identity(path), session_id, turns)
        with bounded(page):  # every read of the request, the connection's limits included
            return self._newest(path, key, session_id, turns=turns, known=known, max_text=max_text)

    def _newest(
        self,
        path: Readable,
        key: tuple[Any, ...],
        session_id: str,
        *,
        turns: int,
        known: int | None,
        max_text: int | None,
    ) -> TimelineBundle | None:
        store = open_store(path, "read")
        try:
            if store.session_row(session_id) is None:
                raise SessionNotFoundError(
                    f"no session {session_id} in {store.location}; see list_sessions()"
                )
            log_seq = store.tail(session_id)[0]
            with self._lock:
                window = self._entries.pop(key, None)
            if window is None or window.timeline.seq > log_seq:  # new, or the file was rewritten
                window = self._open(store, session_id, turns, log_seq)
            with window.lock:
                new = store.events(session_id, start=window.timeline.seq)
                window.timeline.feed(new)
                window.turns = max(window.turns, window.timeline.open_turn or 0)
                with self._lock:
                    self._entries[key] = window
                    while len(self._entries) > self.size:
                        self._entries.popitem(last=False)
                if known is not None and known == window.timeline.seq:
                    return None
                return _bundle(window, max_text=max_text, log_seq=log_seq)
        finally:
            store.close()

    @staticmethod
    def _open(store: SessionStore, session_id: str, turns: int, log_seq: int) -> Window:
        last = last_turn(store, session_id)
        first = max(1, last - turns + 1)
        cut = turn_start(store, session_id, first, stop=log_seq) if last else None
        if cut is None:
            return Window(Timeline(), 0, 1, 0, last)
        timeline, start = _fold_start(store, session_id, cut)
        timeline.seq = start
        return Window(timeline, start, first, cut, last)


def earlier(
    path: Readable, session_id: str, *, before: int, turns: int, max_text: int | None, page: Budget
) -> TimelineBundle:
    """The bundle of the ``turns`` turns before turn ``before`` (fewer at the log's start)."""
    with bounded(page):  # every read of the request, the connection's limits included
        return span(path, session_id, first=max(1, before - turns), until=before, max_text=max_text)


def span(
    path: Readable, session_id: str, *, first: int, until: int | None, max_text: int | None
) -> TimelineBundle:
    """The bundle of turns ``first`` up to (not including) turn ``until`` (``None``: to the log's end),
    folded from the last quiet point before turn ``first`` and read under the caller's budget.
    Its ``pending`` is empty (the inbox is the newest window's); ``complete`` says whether the fold
    reached the end of the span (a page budget may stop it early: ask for fewer turns)."""
    store = open_store(path, "read")
    try:
        if store.session_row(session_id) is None:
            raise SessionNotFoundError(f"no session {session_id} in {store.location}; see list_sessions()")
        log_seq = store.tail(session_id)[0]
        stop = log_seq if until is None else turn_start(store, session_id, until, stop=log_seq)
        if stop is None:
            raise SessionNotFoundError(f"session {session_id} has no turn {until}")
        cut = turn_start(store, session_id, first, stop=stop) if until is None or first < until else None
        if cut is None:
            if until is None:
                raise SessionNotFoundError(f"session {session_id} has no turn {first}")
            window = Window(Timeline(), 0, until, stop, until - 1)
            return {**_bundle(window, max_text=max_text, log_seq=log_seq, high=stop), "complete": True}
        timeline, start = _fold_start(store, session_id, cut)
        events = store.events(session_id, start=start, stop=stop)
        timeline.feed(events)
        window = Window(timeline, start, first, cut, last_turn(store, session_id))
        bundle = _bundle(window, max_text=max_text, log_seq=log_seq, high=stop)
        bundle["pending"] = {"next_step": [], "next_turn": []}  # the inbox is the newest window's
        bundle["complete"] = not events or events[-1].seq == stop - 1
        bundle["last_turn"] = _last_turn(bundle["nodes"])
        return bundle
    finally:
        store.close()
