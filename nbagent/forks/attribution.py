"""Which context mattered (SPEC §11.5): leave-one-out ablation made of ordinary forks and replays.

For turn N the items are every message the turn claimed (pending at its start, or arriving during
it) except the followup or steer that opened it. A run is a fork before turn N, marked
``session/forked.purpose = "attribution"``, replayed with one item dropped; one more run, the
control, drops nothing. An item's score is ``1 − difflib ratio`` between the parent's answer and the
run's answer (the turn's answer texts and tool calls, each call as its name and JSON arguments on
one line). Every run stays in the store as a session, so every number can be opened and diffed, and
:func:`attribution` rebuilds the result from those sessions without running anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from difflib import SequenceMatcher
from typing import Any, Protocol

from nbagent.core.estimate import counter_for, measure, model_counter
from nbagent.core.hooks import AgentFace
from nbagent.core.inbox import InboxState, replay_splice
from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.log.events import (
    SESSION_FORKED,
    SESSION_REPLAYED,
    AssistantMessageEvent,
    Event,
    RequestEstimate,
    SessionForked,
    SessionReplayed,
    Splice,
    StepStart,
    TurnEnd,
    TurnStart,
    UserMessageEvent,
    parse_event,
)
from nbagent.log.messages import UserMessage
from nbagent.models.base import Model, model_provider
from nbagent.store.location import Where
from nbagent.store.opening import open_store
from nbagent.usage import NOT_PRICED, cost
from nbagent.views.attribution import (
    Attribution,
    AttributionItem,
    AttributionPlan,
    PlanItem,
    RunEstimate,
)
from nbagent.views.labels import describe_message
from nbagent.views.text import clip


class Agent(AgentFace, Protocol):
    """What an attribution uses of ``nbagent.Agent`` (named here: forks/ is not imported by it): the
    face every listener sees (its session id, its events), and its model, driver and forks."""

    @property
    def model(self) -> Model: ...
    @property
    def driver(self) -> Any: ...
    def fork(
        self, *, before_turn: int | None = ..., model: Model | str | None = ..., purpose: str | None = ...
    ) -> Any: ...


PURPOSE = "attribution"
ModelChoice = Model | str | Callable[[], Model] | None
"""A model for the runs: an object or a name, or a function returning a fresh one per run (a
``ScriptedModel`` plays its script once)."""


# -- the plan ---------------------------------------------------------------------------------------


def _turn_events(events: Sequence[Event], turn: int) -> tuple[InboxState, list[Event]]:
    """The inbox turn ``turn`` started from and its events (``turn/start`` .. ``turn/end``)."""
    inbox = InboxState()
    out: list[Event] = []
    inside = ended = False
    for ev in events:
        record = parse_event(ev) if ev.type in (TurnStart.type, TurnEnd.type) else None
        if isinstance(record, TurnStart) and record.turn == turn:
            inside = True
        if inside:
            out.append(ev)
            if isinstance(record, TurnEnd) and record.turn == turn:
                ended = True
                break
        elif ev.type == Splice.type:
            inbox = replay_splice(inbox, ev.data, ev.seq)
    if not ended:
        ends = (parse_event(e) for e in events if e.type == TurnEnd.type)
        turns = [r.turn for r in ends if isinstance(r, TurnEnd)]
        have = ", ".join(map(str, turns)) or "none yet"
        raise ValueError(f"the session has no finished turn {turn} (its finished turns: {have})")
    return inbox, out


def _items(inbox: InboxState, events: list[Event]) -> list[tuple[UserMessage, int, str]]:
    """The droppable messages the turn claimed, each with the step that first held it and its queue;
    the opener (the followup, else the first typed steer, of the turn's first claim) left out."""
    pending = {m.id: q for q in ("next-turn", "next-step") for m in inbox.queue(q)}
    arrived: dict[str, str] = {}
    opener: str | None = None
    first_claim = True
    step = 0
    out: list[tuple[UserMessage, int, str]] = []
    for ev in events:
        record = parse_event(ev)
        if isinstance(record, Splice):
            if record.is_claim and first_claim and step == 0:
                taken = inbox.queue(record.target)[record.start : record.start + record.removed_count]
                if record.target == "next-turn" and taken:
                    opener = taken[0].id
                elif opener is None:
                    opener = next((m.id for m in taken if m.kind == "user"), None)
            elif record.is_insert and not record.is_claim:
                arrived.update({m.id: record.target for m in record.inserted})
            inbox = replay_splice(inbox, ev.data, ev.seq)
        elif isinstance(record, StepStart):
            step, first_claim = record.step, False
        elif isinstance(record, UserMessageEvent):
            m = record.message
            queue = pending.get(m.id) or arrived.get(m.id)
            if queue is not None and m.id != opener and m.kind != "tool":
                out.append((m, step, queue))
    # context a tool result carried arrives right after it: the replayed tool makes it again
    carried = _tool_carried(events)
    return [x for x in out if x[0].id not in carried]


def _tool_carried(events: list[Event]) -> set[str]:
    out: set[str] = set()
    after_result = False
    for ev in events:
        if ev.type == Splice.type:
            splice = parse_event(ev)
            if after_result and isinstance(splice, Splice) and splice.inserted and not splice.removed_count:
                out.update(m.id for m in splice.inserted)
                continue
            after_result = False
        else:
            after_result = ev.type == "tool/result"
    return out


def attribution_plan(agent: Agent, turn: int, model: ModelChoice = None) -> AttributionPlan:
    """``agent.attribution_plan(turn)``: the items, the runs and the estimate; writes nothing."""
    inbox, events = _turn_events(agent.events, turn)
    runner = _sample_model(agent, model)
    counter = model_counter(agent.model)  # the tokens the parent's own estimates counted
    items = tuple(
        PlanItem(m.id, _label(m, queue), m.kind, measure(m, counter).tokens, _preview(m, queue), step)
        for m, step, queue in _items(inbox, events)
    )
    return AttributionPlan(agent.session_id, turn, items, len(items) + 1, _estimate(events, items, runner),
                           runner.name)  # fmt: skip


def _label(m: UserMessage, queue: str) -> str:
    label = describe_message(m, queue=queue)
    return label.label or label.badge


def _preview(m: UserMessage, queue: str) -> str:
    return clip(describe_message(m, queue=queue).first_line, 80)


def _estimate(events: list[Event], items: Sequence[PlanItem], model: Model) -> RunEstimate:
    """Each run makes about the parent's requests; a run without an item sends that item's tokens
    fewer in every request from the step that first held it on."""
    totals = {r.step: r.total for r in map(parse_event, events) if isinstance(r, RequestEstimate)}
    steps = len([e for e in events if e.type == StepStart.type])
    out_tokens = sum(
        int((r.usage or {}).get("output_tokens") or 0)
        for r in map(parse_event, events)
        if isinstance(r, AssistantMessageEvent)
    )
    per_run = sum(totals.values())
    saved = sum(i.tokens * max(0, steps - i.step + 1) for i in items)
    runs = len(items) + 1
    input_tokens = max(0, per_run * runs - saved)
    provider = model_provider(model)
    offline = provider in NOT_PRICED
    price = None
    if not offline:
        usage = {"input_tokens": input_tokens, "output_tokens": out_tokens * runs}
        price = cost(provider, getattr(model, "model", None) or model.name.partition(":")[2], usage)
    return RunEstimate(steps * runs, input_tokens, price, offline)


def _sample_model(agent: Agent, model: ModelChoice) -> Model:
    if model is None:
        return agent.model
    if isinstance(model, str) or callable(getattr(model, "stream", None)):
        from nbagent.models.registry import resolve_model

        return resolve_model(model)  # type: ignore[arg-type]
    return model()  # type: ignore[operator]


def _fresh(agent: Agent, model: ModelChoice) -> Model | str:
    """The model of one run: a new one from a factory, else the same object or name."""
    if model is None:
        return agent.model
    if isinstance(model, str) or callable(getattr(model, "stream", None)):
        return model  # type: ignore[return-value]
    return model()  # type: ignore[operator]


# -- running ----------------------------------------------------------------------------------------


async def attribute(
    agent: Agent, turn: int, items: Iterable[str] | None, model: ModelChoice, max_runs: int
) -> Attribution:
    """``agent.attribute(turn)``: one fork per item replayed without it, plus a control."""
    plan = attribution_plan(agent, turn, model)
    chosen = list(plan.items)
    if items is not None:
        wanted = [items] if isinstance(items, str) else list(items)
        known = {i.message_id for i in plan.items}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            raise ValueError(
                f"not items of turn {turn}: {', '.join(unknown)} (see attribution_plan(turn={turn}).items)"
            )
        chosen = [i for i in plan.items if i.message_id in set(wanted)]
    runs = len(chosen) + 1
    if runs > max_runs:
        raise ValueError(
            f"the attribution of turn {turn} needs {runs} runs ({len(chosen)} items left out one at a time "
            f"+ a control), more than max_runs={max_runs}: pass items=[...] to narrow it, or a larger max_runs"
        )
    parent_answer = answer_of(_turn_events(agent.events, turn)[1])
    outcomes: dict[str | None, tuple[str, str]] = {}
    for item in [None, *chosen]:
        child = agent.fork(before_turn=turn, model=_fresh(agent, model), purpose=PURPOSE)
        try:
            await child.replay(turn, drop=() if item is None else (item.message_id,))
            outcomes[None if item is None else item.message_id] = (
                child.session_id,
                answer_of(_turn_events(child.events, turn)[1]),
            )
        finally:
            await child.close()
    return _result(agent.session_id, turn, parent_answer, chosen, outcomes)


def _result(
    session_id: str,
    turn: int,
    parent_answer: str,
    items: Sequence[PlanItem],
    outcomes: dict[str | None, tuple[str, str]],
) -> Attribution:
    control, control_answer = outcomes[None]
    scored = []
    for n, item in enumerate(items):
        if item.message_id not in outcomes:
            continue
        fork, answer = outcomes[item.message_id]
        row = AttributionItem(item.message_id, item.label, item.source, item.tokens,
                              score(parent_answer, answer), answer != parent_answer, fork, item.preview)  # fmt: skip
        scored.append((n, row))
    scored.sort(key=lambda x: (-x[1].score, x[0]))
    return Attribution(
        session_id, turn, tuple(r for _, r in scored), score(parent_answer, control_answer), control
    )


_TOKENS = re.compile(r"\s*\S+\s*|\s+")


def score(parent: str, ablated: str) -> float:
    """``1 − difflib``'s ratio of two answers, rounded to 6 places: 0 the same, 1 nothing in common.

    Compared as sequences of words (each with the whitespace around it), not characters: the
    ratio then counts changed words, and a long answer costs milliseconds instead of seconds
    (difflib's matching is quadratic in the worst case). The ratio is difflib's ``2·M / T``."""
    if parent == ablated:
        return 0.0
    a, b = _TOKENS.findall(parent), _TOKENS.findall(ablated)
    total = len(a) + len(b)
    # The common head and tail are matches difflib would find first; matching only the middle keeps
    # a one-item change cheap however long the answer (diff-match-patch trims the same way).
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    matcher = SequenceMatcher(None, middle_a, middle_b, autojunk=False)
    matched = head + tail + sum(block.size for block in matcher.get_matching_blocks())
    return round(1.0 - 2.0 * matched / total, 6) if total else 0.0


def answer_of(events: Iterable[Event]) -> str:
    """A turn's answer as scored: each answer's text, then each tool call as its name and its
    arguments as JSON (sorted keys), one per line."""
    lines: list[str] = []
    for record in map(parse_event, events):
        if isinstance(record, AssistantMessageEvent):
            if record.text:
                lines.append(record.text)
            for call in record.message.content:
                if call.get("type") == "tool-call":
                    args = _json_args(call.get("arguments"))
                    lines.append(f"{call.get('name')} {args}")
    return "\n".join(lines)


def _json_args(arguments: Any) -> str:
    """A call's arguments as compact JSON with sorted keys (stored as a JSON string or an object)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


# -- rebuilding from the store ----------------------------------------------------------------------


def attribution(agent_or_session: Agent | str, turn: int, *, path: Where | None = None) -> Attribution:
    """``nbagent.attribution(agent_or_session, turn)``: the result of the attribution runs of ``turn``
    already in the store (the latest run per item), without running anything. Pass an agent, or a
    session id with ``path`` (its store)."""
    if isinstance(agent_or_session, str):
        if path is None:
            raise ValueError("nbagent.attribution(session_id, turn) needs path= (the session's store)")
        session_id, where = agent_or_session, path
    else:
        store = agent_or_session.driver.file
        if store is None:
            raise NbagentError("an in-memory session keeps no attribution runs")
        session_id, where = agent_or_session.session_id, store.where
    reader = open_store(where, "read")
    try:
        if reader.session_row(session_id) is None:
            raise SessionNotFoundError(f"no session {session_id} in {reader.location}; see list_sessions()")
        parent_events = reader.events(session_id)
        inbox, events = _turn_events(parent_events, turn)
        row = reader.session_row(session_id)
        counter = _counter_of(row.model if row is not None else None)
        runs: dict[str | None, tuple[int, str]] = {}  # item (None: control) → (created_at, fork id)
        for row in reader.sessions():
            if row.parent != session_id:
                continue
            dropped = _run_of(reader.events(row.id, types=[SESSION_FORKED, SESSION_REPLAYED]), turn)
            if dropped is not False and (dropped not in runs or runs[dropped][0] <= row.created_at):
                runs[dropped] = (row.created_at, row.id)  # type: ignore[index]
        if None not in runs:
            raise ValueError(
                f"session {session_id[:8]} has no attribution runs of turn {turn} in {reader.location}; "
                f"run them with await agent.attribute(turn={turn}) or %agent why {turn}"
            )
        outcomes = {
            item: (fork, answer_of(_turn_events(reader.events(fork), turn)[1]))
            for item, (_, fork) in runs.items()
        }
    finally:
        reader.close(checkpoint=False)
    items = [
        PlanItem(m.id, _label(m, q), m.kind, measure(m, counter).tokens, _preview(m, q), step)
        for m, step, q in _items(inbox, events)
    ]
    return _result(session_id, turn, answer_of(events), items, outcomes)


def _run_of(events: list[Event], turn: int) -> str | bool | None:
    """The item an attribution run of ``turn`` left out (``None``: the control), or ``False`` when
    these events are no such run (another purpose, another turn, or an edited replay)."""
    records = list(map(parse_event, events))
    forked = [r for r in records if isinstance(r, SessionForked)]
    if not forked or forked[-1].purpose != PURPOSE or forked[-1].turn != turn:
        return False
    own = forked[-1].seq  # the copied prefix may hold the parent's own fork and replay records
    replayed = [r for r in records if isinstance(r, SessionReplayed) and r.seq > own]
    if not replayed or replayed[0].parent_turn != turn or replayed[0].move or replayed[0].add:
        return False
    drop = replayed[0].drop
    return None if not drop else drop[0] if len(drop) == 1 else False


def _counter_of(name: str | None) -> Any:
    """The token counter of a recorded model name (``openai:gpt-4.1``, ``echo``)."""
    provider, sep, model = (name or "echo").partition(":")
    return counter_for(provider, model if sep else provider)
