"""Opening, resuming and listing sessions; crash repair of a log that ends inside a turn (SPEC §6)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from nbagent import _json
from nbagent._json import gc_paused
from nbagent.agent import Agent
from nbagent.core.driver_state import Resumed
from nbagent.core.inbox import InboxState, replay_raw, replay_splice
from nbagent.core.retry import RetryPolicy
from nbagent.core.tools import Tool
from nbagent.errors import NbagentError, SessionCorruptError, SessionNotFoundError
from nbagent.log.events import (
    ASSISTANT_MESSAGE,
    INBOX_SPLICED,
    MESSAGE_EVENTS,
    NEXT_STEP,
    NEXT_TURN,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    ApprovalAsked,
    ApprovalDecided,
    AssistantMessageEvent,
    Event,
    Record,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
    parse_event,
    record_type,
)
from nbagent.log.messages import Message, ToolCallBlock, ToolSource, message_from_json, tool_result_message
from nbagent.log.record import required_keys
from nbagent.log.vocabulary import ToolError
from nbagent.models.base import Model
from nbagent.models.registry import resolve_model
from nbagent.store.base import Releasable, SessionRow, SessionStore, StoredSession
from nbagent.store.location import StoreLocation, Where, parse_location
from nbagent.store.opening import open_reader, open_store


def _running_loop() -> asyncio.AbstractEventLoop:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise NbagentError(
            "nbagent needs a running asyncio loop: call this inside `async def main()` run with "
            "asyncio.run(main()), or in a Jupyter kernel"
        ) from None


def open_session(
    path: Where | None,
    *,
    model: Model | str | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    session_id: str | None = None,
    system: str | None = None,
    max_steps: int = 50,
    retry: RetryPolicy | None = None,
    cancel_grace: float = 10.0,
    title: str | None = None,
    notebook: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Agent:
    """Create a new session in the store at ``path`` (a SQLite file, created if missing, or a
    ``postgresql://`` URL); appends no event.

    ``path=None`` keeps the session in memory only (nothing durable), for scratch work and tests.
    ``cancel_grace`` is how long a cancelled turn waits for a started tool (or model stream) that
    ignores the cancellation before abandoning it (SPEC §5.6).
    """
    loop = _running_loop()
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise ValueError(
            f"session_id must be a non-empty str, not {session_id!r}; pass None for a fresh random id"
        )
    sid = uuid.uuid4().hex if session_id is None else session_id
    resolved = resolve_model(model)
    file = lease = None
    if path is not None:
        file = open_store(path, "create")
        try:
            if file.session_row(sid) is not None:
                raise NbagentError(f"session {sid} already exists in {file.location}; use resume_session()")
            lease = file.lease(sid)
            row = StoredSession(
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
            _let_go(file, lease)
            raise
    return _agent(file, lease, loop, sid, resolved, _Settings(tools, system, max_steps, retry, cancel_grace))


def resume_session(
    path: Where,
    session_id: str | None = None,
    *,
    model: Model | str | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    system: str | None = None,
    max_steps: int = 50,
    retry: RetryPolicy | None = None,
    cancel_grace: float = 10.0,
) -> Agent:
    """Reopen a session (the most recent when no id is given), repairing it if it ended mid-turn.

    Appends only the repair events of SPEC §6.3; never starts a turn. Before returning it checks
    in SQL that the log is continuous and every record is valid JSON. On SQLite, the inbox replay
    of every splice and (files up to 16 MB) ``PRAGMA quick_check`` run before the first write of
    any kind (the repair, an ``inject()``, a title), which they refuse on damage; the rest of the
    log is read (and checked) by the first waking call, before that call records anything, so the
    agent is ready at once even for a long session. A damaged log raises ``SessionCorruptError``.
    """
    loop = _running_loop()
    location = parse_location(path)
    # Found and checked read-only first: a non-session or a damaged log changes nothing at all.
    session_id, row, checked, owed = _find_session(location, session_id)
    file = open_store(location, "write")
    lease = None
    try:
        lease = file.lease(session_id)
        if owed:  # SQLite: the splices' replay and the pages, before the first write
            file.check_before_first_write(session_id)
        resumed = _load_state(file, session_id, checked)
    except BaseException:
        _let_go(file, lease)
        raise
    model = _stored_model(row) if model is None else model
    settings = _Settings(tools, system, max_steps, retry, cancel_grace)
    return _agent(file, lease, loop, session_id, model, settings, resumed=resumed)


class _Settings(NamedTuple):
    """What ``open_session`` and ``resume_session`` pass through to the agent unchanged."""

    tools: Iterable[Tool | Callable[..., Any]]
    system: str | None
    max_steps: int
    retry: RetryPolicy | None
    cancel_grace: float


def _agent(
    file: SessionStore | None,
    lease: Releasable | None,
    loop: asyncio.AbstractEventLoop | None,
    session_id: str,
    model: Model | str,
    settings: _Settings,
    **extra: Any,
) -> Agent:
    """The agent over ``file``; if it cannot be built, nothing stays held (lease, connection)."""
    try:
        agent = Agent(
            file=file,
            lease=lease,
            loop=loop,
            session_id=session_id,
            model=model,
            **settings._asdict(),
            **extra,
        )
        agent.reopen = resume_session  # agent.fork opens its child this way (SPEC §11.1)
        return agent
    except BaseException:
        _let_go(file, lease)
        raise


def _let_go(file: SessionStore | None, lease: Releasable | None) -> None:
    """Release what an opening took, writing nothing more (no checkpoint of a failed open)."""
    if lease is not None:
        lease.release()
    if file is not None:
        file.close(checkpoint=False)


def _find_session(
    path: StoreLocation, session_id: str | None
) -> tuple[str, SessionRow, tuple[int, int], bool]:
    """The session to resume, its row, its checked ``(count, last time)``, all read-only, and
    whether the store owes the rest of its checks to the first write (SQLite)."""
    reader = open_reader(path)
    try:
        if session_id is None:
            rows = reader.sessions()
            if not rows:
                raise SessionNotFoundError(
                    f"{reader.location} holds no session; start one with open_session()"
                )
            row = rows[0]
        else:
            found = reader.session_row(session_id)
            if found is None:
                raise SessionNotFoundError(
                    f"no session {session_id} in {reader.location}; see list_sessions()"
                )
            row = found
        checked = reader.check_log(row.id)
        return row.id, row, checked, reader.checks_may_wait(row.id)
    finally:
        reader.close()


def _stored_model(row: SessionRow) -> Model:
    try:
        return resolve_model(row.model) if row.model else resolve_model(None)
    except NbagentError:
        return resolve_model(None)


def _load_state(file: SessionStore, session_id: str, checked: tuple[int, int]) -> Resumed:
    """What a resumed agent needs at once: counters, the inbox, the header, and repair drafts.

    ``checked`` is what the read-only check found; if a writer appended since, check again.
    """
    count, last_time = file.tail(session_id)
    if (count, last_time) != checked:
        count, last_time = file.check_log(session_id)
    last_start = file.last_of_type(session_id, TURN_START)
    last_end = file.last_of_type(session_id, TURN_END)
    header_event = file.last_of_type(session_id, REQUEST_HEADER)
    quiet = file.last_quiet_inbox(session_id)
    inbox = InboxState()
    for ev in file.events(session_id, start=quiet + 1, types=[INBOX_SPLICED]):
        inbox = replay_splice(inbox, ev.data, ev.seq)
    repair: list[Record] = []
    if last_start is not None and (last_end is None or last_end.seq < last_start.seq):
        repair = _corrupt_if_bad(lambda: repair_drafts(file.events(session_id, start=last_start.seq)))
    header = None
    if header_event is not None:
        header = RequestHeader.from_json(header_event.data).settings
    return Resumed(
        next_seq=count,
        last_time=last_time,
        inbox=inbox,
        last_turn=_corrupt_if_bad(lambda: _turn_of(last_start)) if last_start else 0,
        last_header=header,
        prefix=lambda: read_prefix(file, session_id, count, inbox),
        repair=repair,
    )


def _turn_of(event: Event) -> int:
    record = parse_event(event)
    if not isinstance(record, TurnStart):
        raise ValueError(f"seq {event.seq} is no turn/start")
    return int(record.turn)


def _corrupt_if_bad(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, SessionCorruptError):
            raise
        raise SessionCorruptError(
            f"a record of the open turn is damaged ({exc!r}); restore the file from a copy"
        ) from None


def _required(type_: str) -> frozenset[str] | None:
    """The stored keys a resumed log's event of ``type_`` must have (its record's ``required``)."""
    cls = record_type(type_)
    return (required_keys(cls) or None) if cls is not None else None


def _stored_message(event: Event) -> Message | None:
    """The model-visible message of a stored event, strictly decoded (deep-frozen; damage raises).

    The full read of a resumed log runs this on every message event, so it decodes the one stored
    message straight from the row instead of building the event's record first: a raw read of an
    event payload outside ``nbagent.log`` kept on purpose (issue #30), because it was measured:
    decoding ``parse_event(event).message`` instead took 1.4x as long per message event (60k user,
    answer and tool-result events, best of 7: 0.66 s against 0.47 s), and this decode is most of
    what resume's full read adds to the bare read (``benchmarks/run.py``: within 1.2x). The keys
    read here are the records' own (``UserMessageEvent`` is its message, the others hold it under
    ``message``), and ``read_prefix`` has checked each record's ``required`` keys before this runs.
    """
    data = event.data if event.type == USER_MESSAGE else event.data.get("message")
    if event.type == ASSISTANT_MESSAGE and not data.get("content"):
        return None
    return message_from_json(data)


def read_prefix(
    store: SessionStore, session_id: str, count: int, inbox: InboxState
) -> tuple[list[Event], list[Any]]:
    """Read a resumed session's log before the resume in full, and check every record decodes.

    Replays every splice from the start (an impossible one names its seq) and requires the result
    to equal the inbox the resume started from; decodes every model-visible message. Returns the
    events and the history they derive; raises ``SessionCorruptError`` naming the first bad seq.
    """
    location = store.location
    reader = store.reader()  # a connection of its own: never the writer's
    try:
        events = reader.events(session_id, stop=count)
    finally:
        reader.close()
    if len(events) != count:
        raise SessionCorruptError(
            f"session {session_id} in {location} holds {len(events)} events before seq {count}; "
            "restore the file from a copy"
        )
    queues: dict[str, list[Any]] = {NEXT_TURN: [], NEXT_STEP: []}
    history = []
    last_time = 0
    required = {type_: keys for type_ in {ev.type for ev in events} if (keys := _required(type_))}
    with gc_paused():
        for ev in events:
            try:
                data, type_ = ev.data, ev.type
                if type(data) is not dict or type(type_) is not str or type(ev.time) is not int:
                    raise ValueError("not an event record")
                if ev.time < last_time:
                    raise ValueError(f"its time {ev.time} is before the previous event's {last_time}")
                last_time = ev.time
                keys = required.get(type_)
                if keys is not None and not data.keys() >= keys:
                    raise ValueError(f"a {type_} event without {', '.join(sorted(keys - data.keys()))}")
                if type_ == INBOX_SPLICED:
                    replay_raw(queues, data, ev.seq)
                elif type_ in MESSAGE_EVENTS:
                    message = _stored_message(ev)
                    if message is not None:
                        history.append(message)
            except SessionCorruptError:
                raise
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise SessionCorruptError(
                    f"session {session_id} in {location}: the record at seq {ev.seq} is damaged ({exc}); "
                    "restore the file from a copy (nbagent does not truncate logs)"
                ) from None
    if queues[NEXT_TURN] != [m.to_json() for m in inbox.next_turn] or queues[NEXT_STEP] != [
        m.to_json() for m in inbox.next_step
    ]:
        raise SessionCorruptError(
            f"session {session_id} in {location}: replaying its inbox splices from the start does not "
            "give the inbox its last quiet point gives; restore the file from a copy"
        )
    return events, history


_OUTCOME_UNKNOWN = (
    "Error: the session stopped while this tool call was running, so its outcome is unknown. "
    "Retry it only if it is read-only or idempotent; otherwise check the current state first "
    "or ask the user."
)
_NOT_STARTED = "Error: the session stopped before this tool call started; it did not run and may be retried."


@dataclass(slots=True)
class _OpenTurn:
    """Where a log that ends inside a turn stands: what repair must close."""

    turn: int
    open_step: int | None = None
    last_step: int = 0
    calls: list[tuple[str, int]] = field(default_factory=list)
    """The answers' tool calls, with their step, in order."""
    started: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    asked: dict[str, ApprovalAsked] = field(default_factory=dict)
    """Approvals asked and not decided."""

    def fold(self, record: Record) -> None:
        match record:
            case StepStart(step=step):
                self.open_step = self.last_step = step
            case StepEnd():
                self.open_step = None
            case AssistantMessageEvent(step=step, message=message):
                self.calls += [
                    (cast(ToolCallBlock, b)["id"], step)
                    for b in message.content
                    if b.get("type") == "tool-call"
                ]
            case ToolCallEvent(call_id=call_id):
                self.started.add(call_id)
            case ToolResultEvent(message=message):
                # a tool result's source is always ``{"kind": "tool", "call_id"}``
                self.answered.add(cast(ToolSource, message.source)["call_id"])
            case ApprovalAsked() as question:
                self.asked[question.id] = question
            case ApprovalDecided(id=approval_id):
                self.asked.pop(approval_id, None)


def _interrupted_result(turn: int, step: int, call_id: str, was_started: bool, seq: int) -> ToolResultEvent:
    message = tool_result_message(
        call_id,
        [{"type": "text", "text": _OUTCOME_UNKNOWN if was_started else _NOT_STARTED}],
        is_error=True,
        id=f"interrupted-tool-result-{call_id}-{seq}",
    )
    error: ToolError = (
        {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
        if was_started
        else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    )
    return ToolResultEvent(turn, step, message, error)


def repair_drafts(events: list[Event]) -> list[Record]:
    """Closers for a log that ends inside a turn (``events`` starts at its ``turn/start``).

    In order: ``approval/decided{unavailable}`` for a pending approval, an error ``tool/result``
    for each tool call without one, ``step/end`` if a step is open, ``turn/end{interrupted}``.
    """
    state = _OpenTurn(_turn_of(events[0]))
    for ev in events:
        state.fold(parse_event(ev))
    turn, next_seq = state.turn, events[-1].seq + 1
    drafts: list[Record] = [
        ApprovalDecided(a.id, a.tool, a.call_id, outcome="unavailable") for a in state.asked.values()
    ]
    for call_id, step in state.calls:
        if call_id not in state.answered:
            at = state.open_step or step or state.last_step
            drafts.append(
                _interrupted_result(turn, at, call_id, call_id in state.started, next_seq + len(drafts))
            )
    if state.open_step is not None:
        drafts.append(StepEnd(turn, state.open_step))
    drafts.append(TurnEnd(turn, "interrupted"))
    return drafts
