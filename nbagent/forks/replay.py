"""What-if replays (SPEC §11.2): re-enact a parent's turn in a fork, with its arrivals edited.

The plan is read from the parent's log: every inbox change it received *during* turn N (after the
turn's first claim, before its ``turn/end``), each with the step it arrived in. **Step k** means
"delivered while step k runs", so step k+1's request claims it; an arrival between a claim for
step k+1 and that step's ``step/start`` belongs to step k+1 already. Context a tool result carried
(a splice right after a ``tool/result``) is not an arrival: the replayed tool produces it again.
People count "seen by step N" (N = k + 1, the first request that can hold it); the Python ``move``
keeps k. The edit is written as ``session/replayed`` in the replayed turn's first commit, with the
removal of dropped pending context and the arrivals due before the turn (``Agent.wake``'s prelude).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from nbagent.core.agent import AgentCore
from nbagent.core.hooks import PreStep
from nbagent.core.inbox import InboxState, plan_splice, replay_splice
from nbagent.core.journal import Plan
from nbagent.core.runs import Run, fold_run
from nbagent.errors import NbagentError
from nbagent.log.events import (
    INBOX_SPLICED,
    SESSION_FORKED,
    TURN_END,
    TURN_START,
    Event,
    SessionForked,
    SessionReplayed,
    Splice,
    StepStart,
    ToolResultEvent,
    parse_event,
)
from nbagent.log.messages import UserMessage
from nbagent.models.base import Model
from nbagent.store.base import SessionStore, StoreReader
from nbagent.views.labels import describe_message
from nbagent.views.text import clip

Agent = AgentCore
"""A fork's agent: the core's surface is all a replay drives."""

Action = Literal["inject", "steer", "followup", "remove"]


PREVIEW_MAX = 80


@dataclass(frozen=True)
class Arrival:
    """One inbox change the parent received during the turn: which message, what, and when.

    Compares by ``(message_id, action, step)``; the words are there for people."""

    message_id: str
    action: Action
    step: int
    """Delivered while step ``step`` runs (0 = before the turn): the Python ``move`` number."""
    label: str = field(default="", compare=False)
    """A short name: the source's label, else its badge word (``note``, ``steer``, ``dataframe``)."""
    source: str = field(default="", compare=False)
    """The message's source kind."""
    preview: str = field(default="", compare=False)
    """The message's first line, at most 80 characters."""

    @property
    def seen_by(self) -> int:
        """The first step whose request can hold it (1-based, as every view counts steps)."""
        return self.step + 1

    def __repr__(self) -> str:
        what = f"{self.action} {self.label or self.source}".rstrip()
        return f"<Arrival {what} {self.preview!r} seen by step {self.seen_by} id={self.message_id}>"


@dataclass(frozen=True)
class _Delivery:
    arrival: Arrival
    message: UserMessage | None  # for a removal: the message it removed (None if unknown)


def _arrival(
    message_id: str, action: Action, step: int, message: UserMessage | None, queue: str | None = None
) -> Arrival:
    if message is None:
        return Arrival(message_id, action, step)
    if queue is None:
        queue = "next-turn" if action == "followup" else "next-step"
    label = describe_message(message, queue=queue)
    return Arrival(message_id, action, step, label.label or label.badge, label.kind,
                   clip(label.first_line, PREVIEW_MAX))  # fmt: skip


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
    out = [_Delivery(_arrival(m.id, "remove", step, m, splice.target), m) for m in removed]
    for m in splice.inserted:
        action: Action = (
            "followup" if splice.target == "next-turn" else "steer" if m.kind == "user" else "inject"
        )
        out.append(_Delivery(_arrival(m.id, action, step, m), m))
    return out


def _parent_turn(agent: Agent, turn: int) -> tuple[InboxState, list[Event]]:
    """The inbox the parent's turn ``turn`` started from, and that turn's events."""
    # the last one: a fork of a fork holds its parent's session/forked in its copied prefix
    forked = next((e for e in reversed(agent.events) if e.type == SESSION_FORKED), None)
    if forked is None:
        raise NbagentError(f"session {agent.session_id} is not a fork: there is no parent turn to replay")
    record = parse_event(forked)
    assert isinstance(record, SessionForked)  # found by its type
    parent = record.parent
    # the session layer builds every Agent over a SessionStore
    store = cast("SessionStore | None", agent.driver.file)
    if store is None:
        raise NbagentError("an in-memory session has no parent log")
    reader = store.reader()
    try:
        if reader.session_row(parent) is None:
            raise NbagentError(
                f"the parent session {parent} is not in {reader.location}: a replay reads the parent's "
                "turn from the fork's store (copy the parent there with `nbagent sessions copy`)"
            )
        return turn_log(reader, parent, turn)
    finally:
        reader.close(checkpoint=False)


def turn_log(reader: StoreReader, session_id: str, turn: int) -> tuple[InboxState, list[Event]]:
    """The inbox session ``session_id``'s turn ``turn`` started from, and that turn's events
    (``turn/start`` .. ``turn/end``); ``ValueError`` when it has no such finished turn."""
    start = end = None
    for ev in reader.events(session_id, types=[TURN_START, TURN_END]):
        if getattr(parse_event(ev), "turn", None) == turn:  # a turn/start or turn/end record
            start, end = (ev.seq, end) if ev.type == TURN_START else (start, ev.seq)
    if start is None or end is None:
        raise ValueError(f"the session {session_id} has no finished turn {turn}")
    inbox = InboxState()
    for ev in reader.events(session_id, stop=start, types=[INBOX_SPLICED]):
        inbox = replay_splice(inbox, ev.data, ev.seq)
    return inbox, reader.events(session_id, start=start, stop=end + 1)


@dataclass(frozen=True)
class Edit:
    """A checked edit of a parent's turn: the deliveries to make, the pending ids to remove first,
    and the ``session/replayed`` record's fields."""

    deliveries: list[_Delivery]
    drop_pending: tuple[str, ...]
    drop: tuple[str, ...]
    move: dict[str, int]
    add: tuple[dict[str, Any], ...]
    labels: dict[str, str]


def edited(
    plan: list[_Delivery],
    *,
    drop: Iterable[str] = (),
    move: Mapping[str, int] | None = None,
    add: Iterable[tuple[UserMessage | str, int]] = (),
    pending: Mapping[str, tuple[UserMessage, str]] | None = None,
) -> Edit:
    """The plan with ``drop``ped ids left out, ``move``d ids at their new step, ``add``ed injects;
    stable by step (same-step arrivals keep their order; additions come after them). A dropped id
    may also be ``pending`` (context waiting before the turn): it is removed before the turn opens.
    Raises ``ValueError`` for an unknown id or a step below 0, before anything is written."""
    if isinstance(drop, str):
        drop = [drop]
    dropped = list(dict.fromkeys(drop))
    moved = {str(k): _step(v) for k, v in dict(move or {}).items()}
    known = {d.arrival.message_id: d for d in plan}
    waiting = dict(pending or {})
    unknown = [i for i in dropped if i not in known and i not in waiting]
    unknown += [i for i in moved if i not in known]
    if unknown:
        raise ValueError(
            f"not arrivals of this turn: {', '.join(sorted(set(unknown)))} (see replay_plan(); "
            "a dropped id may also be context pending before the turn)"
        )
    added = [(UserMessage.text(m) if isinstance(m, str) else m, _step(k)) for m, k in add]
    labels = {i: known[i].arrival.label if i in known else _pending_label(*waiting[i])
              for i in [*dropped, *moved]}  # fmt: skip
    out = []
    for d in plan:
        mid = d.arrival.message_id
        if mid in dropped:
            continue
        if mid in moved:
            d = _Delivery(replace(d.arrival, step=moved[mid]), d.message)
        out.append(d)
    for m, step in added:
        out.append(_Delivery(_arrival(m.id, "inject", step, m), m))
        labels[m.id] = out[-1].arrival.label
    return Edit(
        sorted(out, key=lambda d: d.arrival.step),
        tuple(i for i in dropped if i not in known and i in waiting),
        tuple(dropped),
        moved,
        tuple({"id": m.id, "step": k} for m, k in added),
        labels,
    )


def _pending_label(m: UserMessage, queue: str) -> str:
    label = describe_message(m, queue=queue)
    return label.label or label.badge


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
    documents the edits). Arrivals due at a step the turn never reached are appended to their
    queues without waking, and listed in ``run.late``."""
    if agent.status != "idle":
        raise NbagentError(f"session {agent.session_id} is {agent.status}; replay needs an idle fork")
    inbox = agent.driver.staged_inbox
    edit = edited(_deliveries(agent, turn), drop=drop, move=move, add=add,
                  pending=_pending(inbox))  # fmt: skip
    if model is not None:
        agent.set_model(model)
    start = agent.driver.committed
    by_step: dict[int, list[_Delivery]] = {}
    for d in edit.deliveries:
        by_step.setdefault(d.arrival.step, []).append(d)
    prelude = _prelude(edit, by_step.pop(0, []), turn)
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
        if not agent.wake(prelude=prelude):
            raise NbagentError(f"session {agent.session_id} has nothing pending: turn {turn} cannot start")
        await agent.when_idle()
    finally:
        remove()
    late = [d for k in sorted(by_step) for d in by_step[k]]
    for d in late:  # never reached: pending for a later turn, never lost silently
        _deliver(agent, d, running=False)
    return replace(
        fold_run(agent.driver.projections.since(start)), late=tuple(d.arrival.message_id for d in late)
    )


def _prelude(edit: Edit, before: list[_Delivery], turn: int) -> Callable[[InboxState, int], Plan]:
    """The replay's first commit, ahead of ``turn/start``: dropped pending context removed, the
    arrivals due before the turn delivered, and the edit recorded."""

    def prelude(state: InboxState, number: int) -> Plan:
        drafts: list[Any] = []
        for mid in edit.drop_pending:
            found = state.find(mid)
            planned = None if found is None else plan_splice(state, found[0], found[1], 1, ())
            if planned is not None:
                drafts.append(planned.event)
                state = planned.after
        for d in before:
            planned = _planned(state, d)
            if planned is not None:
                drafts.append(planned.event)
                state = planned.after
        drafts.append(SessionReplayed(number, turn, edit.drop, edit.move, edit.add, edit.labels))
        return Plan(drafts=drafts, inbox=state)

    return prelude


def _pending(inbox: InboxState) -> dict[str, tuple[UserMessage, str]]:
    return {m.id: (m, q) for q in ("next-turn", "next-step") for m in inbox.queue(q)}


def _planned(state: InboxState, d: _Delivery) -> Any:
    action, m = d.arrival.action, d.message
    if action == "remove":
        found = state.find(d.arrival.message_id)
        return None if found is None else plan_splice(state, found[0], found[1], 1, ())
    if m is None:
        return None
    target = "next-turn" if action == "followup" else "next-step"
    return plan_splice(state, target, len(state.queue(target)), 0, (m,))


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
