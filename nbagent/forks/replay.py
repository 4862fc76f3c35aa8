"""What-if replays (SPEC §11.2): re-enact a parent's turn in a fork, with its arrivals edited.

The plan is read from the parent's log: every inbox change it received *during* turn N (after the
turn's first claim, before its ``turn/end``), each with the step it arrived in. **Step k** means
"delivered while step k runs", so step k+1's request claims it; an arrival between a claim for
step k+1 and that step's ``step/start`` belongs to step k+1 already. Context a tool result carried
(a splice right after a ``tool/result``) is not an arrival: the replayed tool produces it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nbagent.core.agent import AgentCore
from nbagent.core.events import (
    INBOX_SPLICED,
    SESSION_FORKED,
    TURN_END,
    TURN_START,
    Event,
    Splice,
    StepStart,
    ToolResultEvent,
    parse_event,
)
from nbagent.core.hooks import PreStep
from nbagent.core.inbox import InboxState, replay_splice
from nbagent.core.messages import UserMessage
from nbagent.core.runs import Run, fold_run
from nbagent.errors import NbagentError
from nbagent.models.base import Model

Agent = AgentCore
"""A fork's agent: the core's surface is all a replay drives."""

Action = Literal["inject", "steer", "followup", "remove"]


@dataclass(frozen=True)
class Arrival:
    """One inbox change the parent received during the turn: which message, what, and when."""

    message_id: str
    action: Action
    step: int


@dataclass(frozen=True)
class _Delivery:
    arrival: Arrival
    message: UserMessage | None  # None for a removal


def replay_plan(agent: Agent, turn: int) -> tuple[Arrival, ...]:
    """``child.replay_plan(turn=N)``: the parent's arrivals during turn N, in delivery order."""
    return tuple(d.arrival for d in _deliveries(agent, turn))


def _deliveries(agent: Agent, turn: int) -> list[_Delivery]:
    inbox, events = _parent_turn(agent, turn)
    return plan_from_events(inbox, events)


def plan_from_events(inbox: InboxState, events: Iterable[Event]) -> list[_Delivery]:
    """The arrivals in the events of one turn (``turn/start`` .. ``turn/end``), given the inbox
    the turn started from (removals name the messages they removed)."""
    out: list[_Delivery] = []
    started = step = 0
    after_result = False
    for ev in events:
        record = parse_event(ev)
        if isinstance(record, StepStart):
            started = record.step
            step = max(step, started)
        elif isinstance(record, Splice):
            if record.is_claim:
                step = max(step, started + 1)
            elif not (record.is_insert and after_result):  # else: context a tool result carried
                queue = inbox.queue(record.target)
                removed = queue[record.start : record.start + record.removed_count]
                out.extend(_arrivals(record, removed, step))
            inbox = replay_splice(inbox, ev.data, ev.seq)
            after_result = after_result and record.is_insert
            continue
        after_result = isinstance(record, ToolResultEvent)
    return out


def _arrivals(splice: Splice, removed: tuple[UserMessage, ...], step: int) -> list[_Delivery]:
    out = [_Delivery(Arrival(m.id, "remove", step), None) for m in removed]
    for m in splice.inserted:
        action: Action = (
            "followup" if splice.target == "next-turn" else "steer" if m.kind == "user" else "inject"
        )
        out.append(_Delivery(Arrival(m.id, action, step), m))
    return out


def _parent_turn(agent: Agent, turn: int) -> tuple[InboxState, list[Event]]:
    """The inbox the parent's turn ``turn`` started from, and that turn's events."""
    forked = next((e for e in agent.events if e.type == SESSION_FORKED), None)
    if forked is None:
        raise NbagentError(f"session {agent.session_id} is not a fork: there is no parent turn to replay")
    parent = str(forked.data["parent"])
    store = agent.driver.file
    if store is None:
        raise NbagentError("an in-memory session has no parent log")
    reader = store.reader()
    try:
        if reader.session_row(parent) is None:
            raise NbagentError(
                f"the parent session {parent} is not in {reader.location}: a replay reads the parent's "
                "turn from the fork's store (copy the parent there with `nbagent sessions copy`)"
            )
        start = end = None
        for ev in reader.events(parent, types=[TURN_START, TURN_END]):
            if ev.data.get("turn") == turn:
                start, end = (ev.seq, end) if ev.type == TURN_START else (start, ev.seq)
        if start is None or end is None:
            raise ValueError(f"the parent session {parent} has no finished turn {turn}")
        inbox = InboxState()
        for ev in reader.events(parent, stop=start, types=[INBOX_SPLICED]):
            inbox = replay_splice(inbox, ev.data, ev.seq)
        return inbox, reader.events(parent, start=start, stop=end + 1)
    finally:
        reader.close(checkpoint=False)


def edited(
    plan: list[_Delivery],
    *,
    drop: Iterable[str] = (),
    move: Mapping[str, int] | None = None,
    add: Iterable[tuple[UserMessage | str, int]] = (),
) -> list[_Delivery]:
    """The plan with ``drop``ped ids left out, ``move``d ids at their new step, ``add``ed injects;
    stable by step (same-step arrivals keep their order; additions come after them)."""
    dropped = set(drop)
    moved = dict(move or {})
    known = {d.arrival.message_id for d in plan}
    unknown = (dropped | set(moved)) - known
    if unknown:
        raise ValueError(f"not arrivals of this turn: {', '.join(sorted(unknown))} (see replay_plan())")
    out = []
    for d in plan:
        mid = d.arrival.message_id
        if mid in dropped:
            continue
        if mid in moved:
            d = _Delivery(Arrival(mid, d.arrival.action, _step(moved[mid])), d.message)
        out.append(d)
    for message, step in add:
        m = UserMessage.text(message) if isinstance(message, str) else message
        out.append(_Delivery(Arrival(m.id, "inject", _step(step)), m))
    return sorted(out, key=lambda d: d.arrival.step)


def _step(step: Any) -> int:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"a replay step is a number >= 0 (0 = before the turn), not {step!r}")
    return step


async def replay(
    agent: Agent,
    turn: int,
    drop: Iterable[str],
    move: Mapping[str, int] | None,
    add: Iterable[tuple[UserMessage | str, int]],
    model: Model | str | None,
) -> Run:
    """Wake ``agent`` (a fork made before ``turn``) and re-deliver the parent's arrivals of that
    turn at their (edited) steps; returns the run once the agent is idle again (``Agent.replay``
    documents the edits)."""
    plan = edited(_deliveries(agent, turn), drop=drop, move=move, add=add)
    if agent.status != "idle":
        raise NbagentError(f"session {agent.session_id} is {agent.status}; replay needs an idle fork")
    if model is not None:
        agent.set_model(model)
    start = agent.driver.committed
    by_step: dict[int, list[_Delivery]] = {}
    for d in plan:
        by_step.setdefault(d.arrival.step, []).append(d)
    for d in by_step.pop(0, []):
        _deliver(agent, d, running=False)

    opened: list[int] = []  # the turn the wake opens (its number is the parent's when forked before it)

    async def deliver_during_step(step: PreStep, next: Any) -> Any:
        if not opened:
            opened.append(step.turn)
        if step.turn == opened[0]:
            for d in by_step.pop(step.step, []):
                _deliver(agent, d, running=True)
        return await next()

    remove = agent.hooks.pre_step.add(deliver_during_step)
    try:
        if not agent.wake():
            raise NbagentError(f"session {agent.session_id} has nothing pending: turn {turn} cannot start")
        await agent.when_idle()
    finally:
        remove()
    return fold_run(agent.driver.projections.since(start))


def _deliver(agent: Agent, d: _Delivery, *, running: bool) -> None:
    action, m = d.arrival.action, d.message
    if action == "remove":
        agent.inbox.remove(d.arrival.message_id)
    elif m is None:
        return
    elif not running:
        agent.inbox.append("next-turn" if action == "followup" else "next-step", m)
    elif action == "followup":
        agent.followup(m)
    elif action == "steer":
        agent.steer(m)
    else:
        agent.inject(m)
