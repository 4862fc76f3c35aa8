"""Opening, resuming and listing sessions; crash repair of a log that ends inside a turn (SPEC §6)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from nbagent import _json
from nbagent.agent import Agent
from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_MESSAGE,
    INBOX_SPLICED,
    MESSAGE_EVENTS,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Event,
)
from nbagent.inbox import InboxState, replay_splice
from nbagent.journal import Draft, Plan
from nbagent.messages import tool_result_message
from nbagent.models.base import Model
from nbagent.models.registry import resolve_model
from nbagent.projections import derive_history
from nbagent.retry import RetryPolicy
from nbagent.store import SessionRow, SessionStore, open_store
from nbagent.tools import Tool

PathLike = str | os.PathLike[str]


def _running_loop() -> asyncio.AbstractEventLoop:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise NbagentError(
            "nbagent needs a running asyncio loop: call this inside `async def main()` run with "
            "asyncio.run(main()), or in a Jupyter kernel"
        ) from None


def open_session(
    path: PathLike | None,
    *,
    model: Model | str | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    session_id: str | None = None,
    system: str | None = None,
    max_steps: int = 50,
    retry: RetryPolicy | None = None,
    title: str | None = None,
    notebook: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Agent:
    """Create a new session in the SQLite file at ``path`` (created if missing); appends no event.

    ``path=None`` keeps the session in memory only (nothing durable), for scratch work and tests.
    """
    loop = _running_loop()
    sid = session_id or uuid.uuid4().hex
    resolved = resolve_model(model)
    file = lease = None
    if path is not None:
        file = open_store(path, "create")
        try:
            if file.session_row(sid) is not None:
                raise NbagentError(f"session {sid} already exists in {file.path}; use resume_session()")
            lease = file.lease(sid)
            row = (
                sid,
                int(time.time() * 1000),
                title,
                None,
                notebook,
                resolved.name,
                _json.dumps(metadata or {}),
            )
            file.write([], session=row)
        except BaseException:
            if lease is not None:
                lease.release()
            file.close(checkpoint=False)
            raise
    agent = Agent(
        loop=loop,
        file=file,
        lease=lease,
        session_id=sid,
        model=resolved,
        tools=tools,
        system=system,
        max_steps=max_steps,
        retry=retry,
    )
    loop.call_soon(lambda: loop.create_task(agent._session_start("open")))
    return agent


def resume_session(
    path: PathLike,
    session_id: str | None = None,
    *,
    model: Model | str | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    system: str | None = None,
    max_steps: int = 50,
    retry: RetryPolicy | None = None,
) -> Agent:
    """Reopen a session (the most recent when no id is given), repairing it if it ended mid-turn.

    Appends only the repair events of SPEC §6.3; never starts a turn. The log written before the
    resume is read lazily, so the agent takes deliveries at once even for a long session.
    """
    loop = _running_loop()
    file = open_store(path, "write")
    lease = None
    try:
        if session_id is None:
            rows = file.sessions()
            if not rows:
                raise SessionNotFoundError(f"{file.path} holds no session; start one with open_session()")
            session_id = rows[0].id
        row = file.session_row(session_id)
        if row is None:
            raise SessionNotFoundError(f"no session {session_id} in {file.path}; see list_sessions()")
        lease = file.lease(session_id)
        state = _load_state(file, session_id)
    except BaseException:
        if lease is not None:
            lease.release()
        file.close(checkpoint=False)
        raise
    if model is None:
        model = _stored_model(row)
    sid = session_id
    agent = Agent(
        loop=loop,
        file=file,
        lease=lease,
        session_id=sid,
        model=model,
        tools=tools,
        system=system,
        max_steps=max_steps,
        retry=retry,
        next_seq=state["count"],
        last_time=state["last_time"],
        inbox=state["inbox"],
        last_turn=state["last_turn"],
        last_header=state["header"],
        resumed=True,
        events_loader=lambda: _read(file, sid, stop=state["count"]),
        history_loader=lambda: _prefix_history(agent, file, sid, state["count"]),
    )
    if state["repair"]:
        agent._submit(lambda _s: Plan(drafts=state["repair"]))
        agent.repaired = True
    loop.call_soon(lambda: loop.create_task(agent._session_start("resume")))
    return agent


def _prefix_history(agent: Agent, store: SessionStore, session_id: str, stop: int) -> list[Any]:
    """The history written before the resume: from the loaded events if any, else one typed read."""
    if agent._events.prefix_loaded:
        return list(derive_history(agent._events.prefix()))
    return list(derive_history(_read(store, session_id, stop=stop, types=MESSAGE_EVENTS)))


def _stored_model(row: SessionRow) -> Model:
    try:
        return resolve_model(row.model) if row.model else resolve_model(None)
    except NbagentError:
        return resolve_model(None)


def _read(store: SessionStore, session_id: str, **kwargs: Any) -> list[Event]:
    """Read with a connection of its own, so lazy loads never share the writer's."""
    file = store.reader()
    try:
        return file.events(session_id, **kwargs)
    finally:
        file.close()


def _load_state(file: SessionStore, session_id: str) -> dict[str, Any]:
    """What a resumed agent needs at once: counters, the inbox, the header, and repair drafts."""
    count, last_time = file.tail(session_id)
    last_start = file.last_of_type(session_id, TURN_START)
    last_end = file.last_of_type(session_id, TURN_END)
    header_event = file.last_of_type(session_id, REQUEST_HEADER)
    quiet = file.last_quiet_inbox(session_id)
    inbox = InboxState()
    for ev in file.events(session_id, start=quiet + 1, types=[INBOX_SPLICED]):
        inbox = replay_splice(inbox, ev.data, ev.seq)
    repair: list[Draft] = []
    if last_start is not None and (last_end is None or last_end.seq < last_start.seq):
        repair = repair_drafts(file.events(session_id, start=last_start.seq))
    header = None
    if header_event is not None:
        header = {k: v for k, v in header_event.data.items() if k != "reason"}
    return {
        "count": count,
        "last_time": last_time,
        "inbox": inbox,
        "last_turn": last_start.data["turn"] if last_start else 0,
        "header": header,
        "repair": repair,
    }


_OUTCOME_UNKNOWN = (
    "Error: the session stopped while this tool call was running, so its outcome is unknown. "
    "Retry it only if it is read-only or idempotent; otherwise check the current state first "
    "or ask the user."
)
_NOT_STARTED = "Error: the session stopped before this tool call started; it did not run and may be retried."


def repair_drafts(events: list[Event]) -> list[Draft]:
    """Closers for a log that ends inside a turn (``events`` starts at its ``turn/start``).

    In order: ``approval/decided{unavailable}`` for a pending approval, an error ``tool/result``
    for each tool call without one, ``step/end`` if a step is open, ``turn/end{interrupted}``.
    """
    turn = events[0].data["turn"]
    open_step: int | None = None
    last_step = 0
    calls: list[tuple[str, int]] = []
    started: set[str] = set()
    answered: set[str] = set()
    asked: dict[str, dict[str, Any]] = {}
    for ev in events:
        t, d = ev.type, ev.data
        if t == STEP_START:
            open_step = last_step = d["step"]
        elif t == STEP_END:
            open_step = None
        elif t == ASSISTANT_MESSAGE:
            calls += [(b["id"], d["step"]) for b in d["message"]["content"] if b.get("type") == "tool-call"]
        elif t == TOOL_CALL:
            started.add(d["call_id"])
        elif t == TOOL_RESULT:
            answered.add(d["message"]["source"]["call_id"])
        elif t == APPROVAL_ASKED:
            asked[d["id"]] = d
        elif t == APPROVAL_DECIDED:
            asked.pop(d["id"], None)
    next_seq = events[-1].seq + 1
    drafts: list[Draft] = []
    for a in asked.values():
        drafts.append(
            (
                APPROVAL_DECIDED,
                {"id": a["id"], "tool": a.get("tool"), "call_id": a.get("call_id"), "outcome": "unavailable"},
                None,
            )
        )
    for call_id, step in calls:
        if call_id in answered:
            continue
        seq = next_seq + len(drafts)
        was_started = call_id in started
        message = tool_result_message(
            call_id,
            [{"type": "text", "text": _OUTCOME_UNKNOWN if was_started else _NOT_STARTED}],
            is_error=True,
            id=f"interrupted-tool-result-{call_id}-{seq}",
        )
        error = (
            {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
            if was_started
            else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
        )
        data = {
            "turn": turn,
            "step": open_step or step or last_step,
            "message": message.to_json(),
            "error": error,
        }
        drafts.append((TOOL_RESULT, data, message))
    if open_step is not None:
        drafts.append((STEP_END, {"turn": turn, "step": open_step}, None))
    drafts.append((TURN_END, {"turn": turn, "reason": {"kind": "interrupted"}}, None))
    return drafts
