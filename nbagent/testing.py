"""Test helpers: ``check_invariants`` (SPEC §10) and ``derive_history``. Import explicitly."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from nbagent.core.inbox import InboxState
from nbagent.core.projections import derive_history
from nbagent.log import events as ev
from nbagent.log.events import Event
from nbagent.log.messages import UserMessage, message_from_json

__all__ = ["InvariantError", "check_invariants", "derive_history", "replay_inbox"]


class InvariantError(AssertionError):
    """A log violates an invariant of SPEC §10; the message names the first bad seq."""


def _fail(seq: int, what: str) -> None:
    raise InvariantError(f"seq {seq}: {what}")


def _apply(state: InboxState, rec: ev.Splice) -> InboxState:
    """Apply one stored splice strictly: an impossible one, or an id pending twice, fails at its seq."""
    queue = state.queue(rec.target)
    start, count = rec.start, rec.removed_count
    if not (0 <= start <= len(queue)) or count < 0 or start + count > len(queue):
        _fail(rec.seq, f"impossible splice start={start} removed={count} on {rec.target} of {len(queue)}")
    # each is a UserMessage (``Splice.inserted``): the round trip keeps its user role
    inserted = cast("tuple[UserMessage, ...]", tuple(message_from_json(m.to_json()) for m in rec.inserted))
    state = state.with_queue(rec.target, queue[:start] + inserted + queue[start + count :])
    ids = [m.id for m in state.next_turn + state.next_step]
    if len(ids) != len(set(ids)):
        _fail(rec.seq, "a message id is pending twice")
    return state


def replay_inbox(events: Iterable[Event]) -> InboxState:
    """Rebuild both queues from the log's splices (strictly: any impossible splice raises)."""
    state = InboxState()
    for event in events:
        rec = ev.parse_event(event)
        if isinstance(rec, ev.Splice):
            state = _apply(state, rec)
    return state


def check_invariants(
    events: Sequence[Event], *, inbox: Any = None, requests: Sequence[Any] | None = None
) -> None:
    """Raise :class:`InvariantError` naming the first seq that breaks SPEC §10.

    ``inbox`` (an object with ``next_turn``/``next_step``) is compared with the replay of the
    splices; ``requests`` (``ModelRequest``s with ``log_length``) with the history derived from
    the log at dispatch.
    """
    events = [e if isinstance(e, Event) else Event(**e) for e in events]
    parsed = [ev.parse_event(e) for e in events]
    _check_structure(parsed)
    state = _check_claims(parsed)
    if inbox is not None:
        live = (tuple(inbox.next_turn), tuple(inbox.next_step))
        if live != (state.next_turn, state.next_step):
            _fail(len(events), f"the live inbox {live} differs from the replay of the splices")
    if requests is not None:
        _check_requests(events, requests)


def _check_claims(parsed: Sequence[ev.TypedEvent]) -> InboxState:
    """Pending-once and claim ownership, from one replay of the splices; returns the inbox it ends with."""
    state = InboxState()
    admitted: set[str] = set()
    for rec in parsed:
        match rec:
            case ev.TurnStart():
                admitted = set()
            case ev.Splice():
                state = _apply(state, rec)
            case ev.UserMessageEvent(id=message_id):
                if any(m.id == message_id for m in state.next_turn + state.next_step):
                    _fail(rec.seq, f"user/message {message_id} is still pending: it was never claimed")
                if message_id in admitted:
                    _fail(rec.seq, f"user/message {message_id} is admitted twice in one turn")
                admitted.add(message_id)
    return state


def _check_requests(events: Sequence[Event], requests: Sequence[Any]) -> None:
    """Model-visible means logged: each request held the history derived from the log at dispatch."""
    for n, request in enumerate(requests, 1):
        length = request.log_length
        expected = derive_history(events[:length])
        if tuple(request.messages) != expected:
            _fail(
                length,
                f"request #{n} sent {len(request.messages)} messages but the log derives {len(expected)}",
            )


def _check_structure(parsed: Sequence[ev.TypedEvent]) -> None:
    """Seqs count up and time never goes back; turns and steps nest and count up; chunks, answers
    and tools name the open turn and step; every tool call has exactly one result in its step;
    claims happen inside turns (SPEC §10, 1–6). Fails at the first bad seq."""
    structure = _Structure()
    last_time: int | None = None
    for i, rec in enumerate(parsed):
        if rec.seq != i:
            _fail(rec.seq, f"expected seq {i}: seqs must count 0, 1, 2… with no gaps")
        if last_time is not None and rec.time < last_time:
            _fail(rec.seq, f"time {rec.time} goes back from {last_time}")
        last_time = rec.time
        structure.feed(rec)


class _Structure:
    """The open turn and step as the log goes, and the tool calls of the open turn."""

    def __init__(self) -> None:
        self.open_turn: int | None = None
        self.last_turn = 0
        self.open_step: int | None = None
        self.last_step = 0
        self.calls: dict[str, int] = {}  # assistant tool calls of the open turn -> step
        self.logged_calls: dict[str, int] = {}
        self.results: set[str] = set()

    def feed(self, rec: ev.TypedEvent) -> None:
        match rec:
            case ev.TurnStart():
                self.turn_start(rec)
            case ev.TurnEnd():
                self.turn_end(rec)
            case ev.StepStart():
                self.step_start(rec)
            case ev.StepEnd(turn=turn, step=step):
                if self.open_step is None or step != self.open_step or turn != self.open_turn:
                    _fail(rec.seq, f"step/end {step} closes no open step")
                self.open_step = None
            case ev.AssistantChunk() | ev.AssistantMessageEvent() | ev.ToolCallEvent() | ev.ToolResultEvent():
                self.in_step(rec)
            case ev.Splice(removed_count=removed, outcome=None) if removed and self.open_turn is None:
                _fail(rec.seq, "a claim outside an open turn")
            case ev.UserMessageEvent() if self.open_turn is None or self.open_step is None:
                _fail(rec.seq, "user/message outside an open step")

    def turn_start(self, rec: ev.TurnStart) -> None:
        if self.open_turn is not None:
            _fail(rec.seq, f"turn {rec.turn} starts inside open turn {self.open_turn}")
        if rec.turn != self.last_turn + 1:
            _fail(rec.seq, f"turn {rec.turn} follows turn {self.last_turn}")
        self.open_turn = self.last_turn = rec.turn
        self.last_step = 0
        self.calls, self.logged_calls, self.results = {}, {}, set()

    def turn_end(self, rec: ev.TurnEnd) -> None:
        if self.open_turn is None or rec.turn != self.open_turn:
            _fail(rec.seq, f"turn/end {rec.turn} closes no open turn (open: {self.open_turn})")
        if self.open_step is not None:
            _fail(rec.seq, f"turn/end with step {self.open_step} still open")
        missing = [c for c in self.calls if c not in self.results]
        if missing:
            _fail(rec.seq, f"tool calls without a result by the end of the turn: {missing}")
        self.open_turn = None

    def step_start(self, rec: ev.StepStart) -> None:
        if self.open_turn is None or rec.turn != self.open_turn:
            _fail(rec.seq, "step/start outside its turn")
        if self.open_step is not None:
            _fail(rec.seq, f"step {rec.step} starts inside open step {self.open_step}")
        if rec.step != self.last_step + 1:
            _fail(rec.seq, f"step {rec.step} follows step {self.last_step}")
        self.open_step = self.last_step = rec.step

    def in_step(
        self, rec: ev.AssistantChunk | ev.AssistantMessageEvent | ev.ToolCallEvent | ev.ToolResultEvent
    ) -> None:
        """A chunk, an answer or a tool record: it names the open turn and step (a crash repair's
        ``TOOL_NOT_STARTED`` result may name the step just closed)."""
        repair = isinstance(rec, ev.ToolResultEvent) and rec.error_code == "TOOL_NOT_STARTED"
        if self.open_turn is None or rec.turn != self.open_turn:
            _fail(rec.seq, f"{rec.type} names turn {rec.turn} but the open turn is {self.open_turn}")
        if (self.open_step is None or rec.step != self.open_step) and not (
            repair and rec.step == self.last_step
        ):
            _fail(rec.seq, f"{rec.type} names step {rec.step} but the open step is {self.open_step}")
        match rec:
            case ev.AssistantMessageEvent(call_ids=ids):
                self.calls.update(dict.fromkeys(ids, rec.step))
            case ev.ToolCallEvent(call_id=call_id):
                if call_id in self.logged_calls:
                    _fail(rec.seq, f"tool call {call_id} logged twice")
                self.logged_calls[call_id] = rec.step
            case ev.ToolResultEvent():
                self.tool_result(rec, repair)

    def tool_result(self, rec: ev.ToolResultEvent, repair: bool) -> None:
        call_id = rec.call_id
        if call_id in self.results:
            _fail(rec.seq, f"tool call {call_id} has two results")
        if call_id not in self.logged_calls and not repair:
            _fail(rec.seq, f"tool/result for {call_id} has no tool/call before it")
        if call_id in self.logged_calls and self.logged_calls[call_id] != rec.step:
            _fail(rec.seq, f"tool/result for {call_id} is not in its call's step")
        self.results.add(call_id)
