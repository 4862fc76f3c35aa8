"""Test helpers: ``check_invariants`` (SPEC §10) and ``derive_history``. Import explicitly."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nbagent.events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    INBOX_SPLICED,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from nbagent.inbox import InboxState
from nbagent.messages import message_from_json
from nbagent.projections import derive_history

__all__ = ["InvariantError", "check_invariants", "derive_history", "replay_inbox"]


class InvariantError(AssertionError):
    """A log violates an invariant of SPEC §10; the message names the first bad seq."""


def _fail(seq: int, what: str) -> None:
    raise InvariantError(f"seq {seq}: {what}")


def _apply(state: InboxState, ev: Event) -> InboxState:
    """Apply one stored splice strictly: an impossible one, or an id pending twice, fails at its seq."""
    d = ev.data
    queue = state.queue(d["target"])
    start, count = d["start"], d.get("removed_count", 0)
    if not (0 <= start <= len(queue)) or count < 0 or start + count > len(queue):
        _fail(ev.seq, f"impossible splice start={start} removed={count} on {d['target']} of {len(queue)}")
    inserted = tuple(message_from_json(m) for m in d.get("inserted", ()))
    state = state.with_queue(d["target"], queue[:start] + inserted + queue[start + count :])
    ids = [m.id for m in state.next_turn + state.next_step]
    if len(ids) != len(set(ids)):
        _fail(ev.seq, "a message id is pending twice")
    return state


def replay_inbox(events: Iterable[Event]) -> InboxState:
    """Rebuild both queues from the log's splices (strictly: any impossible splice raises)."""
    state = InboxState()
    for ev in events:
        if ev.type == INBOX_SPLICED:
            state = _apply(state, ev)
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
    last_time = None
    open_turn: int | None = None
    last_turn = 0
    open_step: int | None = None
    last_step = 0
    calls: dict[str, int] = {}  # assistant tool calls of the open turn -> step
    logged_calls: dict[str, int] = {}
    results: set[str] = set()
    for i, ev in enumerate(events):
        t, d, seq = ev.type, ev.data, ev.seq
        if seq != i:
            _fail(seq, f"expected seq {i}: seqs must count 0, 1, 2… with no gaps")
        if last_time is not None and ev.time < last_time:
            _fail(seq, f"time {ev.time} goes back from {last_time}")
        last_time = ev.time
        if t == TURN_START:
            if open_turn is not None:
                _fail(seq, f"turn {d['turn']} starts inside open turn {open_turn}")
            if d["turn"] != last_turn + 1:
                _fail(seq, f"turn {d['turn']} follows turn {last_turn}")
            open_turn = last_turn = d["turn"]
            last_step = 0
            calls, logged_calls, results = {}, {}, set()
        elif t == TURN_END:
            if open_turn is None or d["turn"] != open_turn:
                _fail(seq, f"turn/end {d['turn']} closes no open turn (open: {open_turn})")
            if open_step is not None:
                _fail(seq, f"turn/end with step {open_step} still open")
            missing = [c for c in calls if c not in results]
            if missing:
                _fail(seq, f"tool calls without a result by the end of the turn: {missing}")
            open_turn = None
        elif t == STEP_START:
            if open_turn is None or d["turn"] != open_turn:
                _fail(seq, "step/start outside its turn")
            if open_step is not None:
                _fail(seq, f"step {d['step']} starts inside open step {open_step}")
            if d["step"] != last_step + 1:
                _fail(seq, f"step {d['step']} follows step {last_step}")
            open_step = last_step = d["step"]
        elif t == STEP_END:
            if open_step is None or d["step"] != open_step or d["turn"] != open_turn:
                _fail(seq, f"step/end {d.get('step')} closes no open step")
            open_step = None
        elif t in (ASSISTANT_CHUNK, ASSISTANT_MESSAGE, TOOL_CALL, TOOL_RESULT):
            repair = t == TOOL_RESULT and d.get("error", {}).get("code") == "TOOL_NOT_STARTED"
            if open_turn is None or d.get("turn") != open_turn:
                _fail(seq, f"{t} names turn {d.get('turn')} but the open turn is {open_turn}")
            if open_step is None or d.get("step") != open_step:
                if not (repair and d.get("step") == last_step):
                    _fail(seq, f"{t} names step {d.get('step')} but the open step is {open_step}")
            if t == ASSISTANT_MESSAGE:
                for b in d["message"]["content"]:
                    if b.get("type") == "tool-call":
                        calls[b["id"]] = d["step"]
            elif t == TOOL_CALL:
                if d["call_id"] in logged_calls:
                    _fail(seq, f"tool call {d['call_id']} logged twice")
                logged_calls[d["call_id"]] = d["step"]
            elif t == TOOL_RESULT:
                call_id = d["message"]["source"]["call_id"]
                if call_id in results:
                    _fail(seq, f"tool call {call_id} has two results")
                if call_id not in logged_calls and not repair:
                    _fail(seq, f"tool/result for {call_id} has no tool/call before it")
                if call_id in logged_calls and logged_calls[call_id] != d["step"]:
                    _fail(seq, f"tool/result for {call_id} is not in its call's step")
                results.add(call_id)
        elif t == INBOX_SPLICED:
            if d.get("removed_count") and "outcome" not in d:
                if open_turn is None:
                    _fail(seq, "a claim outside an open turn")
        elif t == USER_MESSAGE:
            if open_turn is None or open_step is None:
                _fail(seq, "user/message outside an open step")
    # Pending-once, claim ownership and the inbox projection come from one replay.
    state = InboxState()
    admitted: set[str] = set()
    for ev in events:
        t, d = ev.type, ev.data
        if t == TURN_START:
            admitted = set()
        elif t == INBOX_SPLICED:
            state = _apply(state, ev)
        elif t == USER_MESSAGE:
            if any(m.id == d["id"] for m in state.next_turn + state.next_step):
                _fail(ev.seq, f"user/message {d['id']} is still pending: it was never claimed")
            if d["id"] in admitted:
                _fail(ev.seq, f"user/message {d['id']} is admitted twice in one turn")
            admitted.add(d["id"])
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
