"""What the page's "What if…" editor shows for a finished turn (SPEC §11.4): its arrivals, grouped by
the step that saw them, with every word ready-made (docs/timeline-json.md's rule).

The arrivals are :func:`nbagent.forks.replay.plan_from_events` read from the session's own log (the
editor sits on the turn the user looks at, before any fork exists), plus the context that was pending
when the turn started (seen by step 1; a replay can drop it, not move it). Steps are counted as
every view counts them: "seen by step N" is 1-based, ``move={id: N - 1}`` in Python's terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nbagent.core.inbox import InboxState, replay_splice
from nbagent.forks.replay import plan_from_events
from nbagent.log.events import (
    INBOX_SPLICED,
    STEP_START,
    Event,
    TurnEnd,
    TurnStart,
    parse_as,
)
from nbagent.log.messages import UserMessage
from nbagent.views.labels import describe_message
from nbagent.views.text import clip

PREVIEW = 120
"""Characters of an arrival's first line the editor shows."""


def _turn_of(ev: Event, cls: type[TurnStart] | type[TurnEnd]) -> int | None:
    """The turn a ``turn/start`` or ``turn/end`` row names (its typed record's), ``None`` for another
    row or a damaged one (a view shows any log)."""
    record = parse_as(ev, cls)
    return None if record is None else record.turn


def finished_turns(events: Sequence[Event]) -> list[int]:
    """The turns of ``events`` that ended, in order, each once."""
    return sorted({turn for ev in events if (turn := _turn_of(ev, TurnEnd)) is not None})


def _bounds(events: Sequence[Event], turn: int) -> tuple[int, int]:
    start = end = None
    for i, ev in enumerate(events):
        if _turn_of(ev, TurnStart) == turn:
            start = i
        elif start is not None and _turn_of(ev, TurnEnd) == turn:
            end = i
            break
    if start is None or end is None:
        has = ", ".join(map(str, finished_turns(events))) or "none"
        raise ValueError(f"this session has no finished turn {turn} (finished turns: {has})")
    return start, end


def _row(m: UserMessage, action: str, seen_by: int, *, pending: bool, queue: str) -> dict[str, Any]:
    label = describe_message(m, queue=queue)
    return {
        "id": m.id,
        "action": action,
        "seen_by": seen_by,
        "label": label.label or label.badge,
        "source": label.kind,
        "badge": label.badge,
        "preview": clip(label.first_line, PREVIEW),
        "pending": pending,
        "movable": not pending and action != "remove",
    }


def editor_plan(events: Sequence[Event], turn: int) -> dict[str, Any]:
    """The editor's view model of finished turn ``turn`` of a session's ``events``:
    ``{turn, steps: [{step, label}], arrivals: [{id, action, seen_by, label, source, badge, preview,
    pending, movable}]}``; raises ``ValueError`` naming the finished turns when there is no such turn."""
    start, end = _bounds(events, turn)
    inbox = InboxState()
    for ev in events[:start]:
        if ev.type == INBOX_SPLICED:
            inbox = replay_splice(inbox, ev.data, ev.seq)
    body = events[start : end + 1]
    steps = sum(1 for ev in body if ev.type == STEP_START)
    opener = inbox.next_turn[:1]  # the followup that opened the turn is the turn itself, not an edit
    rows = [_row(m, "inject", 1, pending=True, queue="next-step") for m in inbox.next_step]
    known = {m.id: m for m in (*inbox.next_step, *inbox.next_turn)}
    for d in plan_from_events(inbox, body):
        a = d.arrival
        m = d.message or known.get(a.message_id)
        if m is None or any(o.id == a.message_id for o in opener):
            continue
        known[m.id] = m
        queue = "next-turn" if a.action == "followup" else "next-step"
        rows.append(_row(m, a.action, a.step + 1, pending=False, queue=queue))
    last = max([steps, *(r["seen_by"] for r in rows)]) if rows else steps
    return {
        "turn": turn,
        "steps": [
            {
                "step": k,
                "label": f"seen by step {k}" + ("" if k <= steps else " (never reached: pending after)"),
            }
            for k in range(1, max(last, 1) + 1)
        ],
        "arrivals": rows,
    }
