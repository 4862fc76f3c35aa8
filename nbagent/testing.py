"""Test helpers: ``check_invariants`` (SPEC §10) and ``derive_history``. Import explicitly."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nbagent.core import events as ev
from nbagent.core.events import Event
from nbagent.core.inbox import InboxState
from nbagent.core.messages import message_from_json
from nbagent.core.projections import derive_history

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
    inserted = tuple(message_from_json(m.to_json()) for m in rec.inserted)
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
    # Pending-once, claim ownership and the inbox projection come from one replay.
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
    if inbox is not None:
        live = (tuple(inbox.next_turn), tuple(inbox.next_step))
        if live != (state.next_turn, state.next_step):
            _fail(len(events), f"the live inbox {live} differs from the replay of the splices")
    if requests is not None:
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
    last_time: int | None = None
    open_turn: int | None = None
    last_turn = 0
    open_step: int | None = None
    last_step = 0
    calls: dict[str, int] = {}  # assistant tool calls of the open turn -> step
    logged_calls: dict[str, int] = {}
    results: set[str] = set()
    for i, rec in enumerate(parsed):
        seq = rec.seq
        if seq != i:
            _fail(seq, f"expected seq {i}: seqs must count 0, 1, 2… with no gaps")
        if last_time is not None and rec.time < last_time:
            _fail(seq, f"time {rec.time} goes back from {last_time}")
        last_time = rec.time
        match rec:
            case ev.TurnStart(turn=turn):
                if open_turn is not None:
                    _fail(seq, f"turn {turn} starts inside open turn {open_turn}")
                if turn != last_turn + 1:
                    _fail(seq, f"turn {turn} follows turn {last_turn}")
                open_turn = last_turn = turn
                last_step = 0
                calls, logged_calls, results = {}, {}, set()
            case ev.TurnEnd(turn=turn):
                if open_turn is None or turn != open_turn:
                    _fail(seq, f"turn/end {turn} closes no open turn (open: {open_turn})")
                if open_step is not None:
                    _fail(seq, f"turn/end with step {open_step} still open")
                missing = [c for c in calls if c not in results]
                if missing:
                    _fail(seq, f"tool calls without a result by the end of the turn: {missing}")
                open_turn = None
            case ev.StepStart(turn=turn, step=step):
                if open_turn is None or turn != open_turn:
                    _fail(seq, "step/start outside its turn")
                if open_step is not None:
                    _fail(seq, f"step {step} starts inside open step {open_step}")
                if step != last_step + 1:
                    _fail(seq, f"step {step} follows step {last_step}")
                open_step = last_step = step
            case ev.StepEnd(turn=turn, step=step):
                if open_step is None or step != open_step or turn != open_turn:
                    _fail(seq, f"step/end {step} closes no open step")
                open_step = None
            case ev.AssistantChunk() | ev.AssistantMessageEvent() | ev.ToolCallEvent() | ev.ToolResultEvent():
                repair = isinstance(rec, ev.ToolResultEvent) and rec.error_code == "TOOL_NOT_STARTED"
                if open_turn is None or rec.turn != open_turn:
                    _fail(seq, f"{rec.type} names turn {rec.turn} but the open turn is {open_turn}")
                if (open_step is None or rec.step != open_step) and not (repair and rec.step == last_step):
                    _fail(seq, f"{rec.type} names step {rec.step} but the open step is {open_step}")
                match rec:
                    case ev.AssistantMessageEvent(call_ids=ids):
                        calls.update(dict.fromkeys(ids, rec.step))
                    case ev.ToolCallEvent(call_id=call_id):
                        if call_id in logged_calls:
                            _fail(seq, f"tool call {call_id} logged twice")
                        logged_calls[call_id] = rec.step
                    case ev.ToolResultEvent(call_id=call_id):
                        if call_id in results:
                            _fail(seq, f"tool call {call_id} has two results")
                        if call_id not in logged_calls and not repair:
                            _fail(seq, f"tool/result for {call_id} has no tool/call before it")
                        if call_id in logged_calls and logged_calls[call_id] != rec.step:
                            _fail(seq, f"tool/result for {call_id} is not in its call's step")
                        results.add(call_id)
            case ev.Splice(removed_count=removed, outcome=None) if removed and open_turn is None:
                _fail(seq, "a claim outside an open turn")
            case ev.UserMessageEvent() if open_turn is None or open_step is None:
                _fail(seq, "user/message outside an open step")
