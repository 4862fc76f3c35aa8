"""The durable event envelope and the core event types (SPEC §4), each one frozen record.

An event is written and read as the same record. The loop, the tool batch and the inbox build a
record (``TurnEnd(3, "completed")``) and stage it; the journal gives it its ``seq`` and ``time``
and stores ``record.to_json()``. Readers (the views, ``nbagent.testing``, owned runs) turn a stored
:class:`Event` back into its record with :func:`parse_event`, the one adapter, and ``match`` on the
record's class instead of reading dict keys. A type this version does not know parses to
:class:`UnknownEvent`, so old readers tolerate new logs.

Adding an event type means writing its record here: a ``@dataclass(frozen=True, slots=True)``
subclass of :class:`Record` with its ``type`` tag and its fields. Defining the class registers it
with the adapter; its JSON is its fields in order (override ``to_json``/``from_json`` only for a
different shape). The stored JSON of every type is pinned by
``tests/golden/events_session.jsonl``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, NamedTuple, TypeVar

from nbagent._json import FrozenDict, FrozenList
from nbagent.log.fork_records import SessionForked as SessionForked
from nbagent.log.fork_records import SessionReplayed as SessionReplayed
from nbagent.log.messages import AssistantMessage, UserMessage, message_view
from nbagent.log.record import EventParseError as EventParseError
from nbagent.log.record import Record, UnknownEvent, field_shape, record_type
from nbagent.log.vocabulary import NEXT_STEP as NEXT_STEP
from nbagent.log.vocabulary import NEXT_TURN as NEXT_TURN
from nbagent.log.vocabulary import (
    ApprovalOutcome,
    ApprovalScope,
    Failure,
    HeaderReason,
    SpliceOutcome,
    Target,
    TokenUsage,
    ToolError,
    TurnEndKind,
)


class Event(NamedTuple):
    """One durable fact of a session log; ``data`` is plain JSON as stored."""

    seq: int
    time: int
    type: str
    data: Any


_EMPTY: Final[Mapping[str, Any]] = FrozenDict()


def block_text(content: Any) -> str:
    """The concatenated ``text`` blocks of a stored message's content."""
    return "".join(
        b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"
    )


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


def _opt_map(value: Any) -> Any:
    return value if isinstance(value, Mapping) else None


# -- the records (the base class, its registry and UnknownEvent: nbagent/log/record.py) -------------


@dataclass(frozen=True, slots=True)
class Splice(Record):
    """``agent/inbox/spliced``: one inbox mutation (an insertion, a claim, a cancel, a replacement)."""

    type: ClassVar[str] = "agent/inbox/spliced"
    required: ClassVar[frozenset[str]] = frozenset({"target", "start", "inserted"})
    target: Target
    start: int
    inserted: tuple[UserMessage, ...] = ()
    removed_count: int = 0
    outcome: SpliceOutcome | None = None
    """``canceled`` for a cancel or replacement; ``None`` for an insertion or a claim."""

    @property
    def is_claim(self) -> bool:
        """A claim is exactly a pure deletion with no ``outcome`` (SPEC §4)."""
        return self.removed_count > 0 and not self.inserted and self.outcome is None

    @property
    def is_cancel(self) -> bool:
        """Pending messages were canceled (``inserted`` non-empty makes it a replacement)."""
        return self.outcome == "canceled" and self.removed_count > 0

    @property
    def is_insert(self) -> bool:
        return self.removed_count == 0 and bool(self.inserted)

    def to_json(self) -> FrozenDict:
        data: dict[str, Any] = {"target": self.target, "start": self.start}
        if self.removed_count:
            data["removed_count"] = self.removed_count
        data["inserted"] = FrozenList([m.to_json() for m in self.inserted])
        if self.outcome is not None:
            data["outcome"] = self.outcome
        return FrozenDict(data)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Splice:
        inserted = tuple(message_view(m) for m in data.get("inserted") or () if isinstance(m, Mapping))
        return cls(
            data["target"],
            data.get("start", 0),
            inserted,  # type: ignore[arg-type]
            data.get("removed_count", 0),
            data.get("outcome"),
        )


@dataclass(frozen=True, slots=True)
class TurnStart(Record):
    """``turn/start``: a driver opened turn ``turn``."""

    type: ClassVar[str] = "turn/start"
    turn: int


@dataclass(frozen=True, slots=True)
class TurnEnd(Record):
    """``turn/end``: every exit from an opened turn; stored as ``{"turn", "reason": {"kind", ...}}``."""

    type: ClassVar[str] = "turn/end"
    required: ClassVar[frozenset[str]] = frozenset({"turn", "reason"})
    turn: int
    kind: TurnEndKind = "completed"
    """How the turn ended (read from a newer log, it may be a kind this version does not know)."""
    cause: str | None = None
    """Why an ``aborted`` turn was cancelled (``user``, ``closed``…)."""
    error: Failure | None = None
    """Why an ``error`` turn failed (stored as ``{"message", "code", "status"?}``)."""

    @property
    def reason(self) -> dict[str, Any]:
        """The stored ``reason``: ``{"kind"}``, plus ``reason: {kind: cause}`` or ``error``."""
        reason: dict[str, Any] = {"kind": self.kind}
        if self.kind == "aborted":
            reason["reason"] = {"kind": self.cause}
        if self.error is not None:
            reason["error"] = self.error.to_json()
        return reason

    def to_json(self) -> FrozenDict:
        return FrozenDict(turn=self.turn, reason=self.reason)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnEnd:
        reason = _map(data.get("reason"))
        inner = reason.get("reason")
        cause = str(inner.get("kind")) if isinstance(inner, Mapping) and inner.get("kind") else None
        error = reason.get("error")
        kind = str(reason.get("kind", "completed"))
        failure = Failure.from_json(error) if isinstance(error, Mapping) else None
        return cls(data["turn"], kind, cause, failure)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _InStep(Record):
    """An event of step ``step`` of turn ``turn`` (its first two fields, stored first)."""

    turn: int
    step: int


@dataclass(frozen=True, slots=True)
class StepStart(_InStep):
    """``step/start``: step ``step`` of turn ``turn`` begins (its messages follow)."""

    type: ClassVar[str] = "step/start"


@dataclass(frozen=True, slots=True)
class StepEnd(_InStep):
    """``step/end``: the step's request and tools are done."""

    type: ClassVar[str] = "step/end"


@dataclass(frozen=True, slots=True)
class UserMessageEvent(Record):
    """``user/message``: one message of an entered batch (the model sees it); stored as the message."""

    type: ClassVar[str] = "user/message"
    required: ClassVar[frozenset[str]] = frozenset({"id", "role", "content", "source"})
    message: UserMessage

    @property
    def id(self) -> str:
        return self.message.id

    @property
    def source(self) -> Mapping[str, Any]:
        return _map(self.message.source)

    @property
    def is_typed_prompt(self) -> bool:
        """SPEC §2.3: a typed prompt is exactly a message whose source kind is ``user``."""
        return self.source.get("kind") == "user"

    def to_json(self) -> FrozenDict:
        return self.message.to_json()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UserMessageEvent:
        return cls(message_view(data))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RequestHeader(Record):
    """``request/header``: the model, system prompt and tools of the next request, when new or changed."""

    type: ClassVar[str] = "request/header"
    model: str = ""
    reason: HeaderReason = "initial"
    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()

    @property
    def settings(self) -> tuple[str, str | None, tuple[Mapping[str, Any], ...]]:
        """What the header says, without why it was written (equal settings need no new header)."""
        return self.model, self.system, self.tools

    def to_json(self) -> FrozenDict:
        data: dict[str, Any] = {"model": self.model}
        if self.system is not None:
            data["system"] = self.system
        if self.tools:
            data["tools"] = list(self.tools)
        data["reason"] = self.reason
        return FrozenDict(data)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestHeader:
        system = data.get("system")
        return cls(
            str(data.get("model", "")),
            str(data.get("reason", "")),  # type: ignore[arg-type]
            None if system is None else str(system),
            tuple(data.get("tools") or ()),
        )


@dataclass(frozen=True, slots=True)
class RequestEstimate(_InStep):
    """``request/estimate``: the request's estimated input tokens by source kind (SPEC §12), committed
    with the step's entered messages; ``window`` and ``warning`` are stored only when known."""

    type: ClassVar[str] = "request/estimate"
    total: int
    by_source: Mapping[str, int]
    counter: str = "chars"
    window: int | None = None
    warning: Mapping[str, Any] | None = None

    def to_json(self) -> FrozenDict:
        names, values = field_shape(type(self))
        return FrozenDict((n, v) for n, v in zip(names, values(self)) if v is not None)


@dataclass(frozen=True, slots=True)
class AssistantChunk(_InStep):
    """``assistant/chunk``: a streamed piece of an answer (stored in batches, SPEC §6.2)."""

    type: ClassVar[str] = "assistant/chunk"
    required: ClassVar[frozenset[str]] = frozenset()
    """None of its keys is checked at resume."""
    chunk: Mapping[str, Any]
    """The chunk as ``nbagent.models.base.chunk_to_json`` stores it: ``{"type": "text", "text"}``…"""

    @property
    def kind(self) -> str:
        """``text``, ``reasoning``, ``tool-call``, ``usage``, ``finish``…"""
        return str(self.chunk.get("type", ""))

    @property
    def text(self) -> str:
        return str(self.chunk.get("text") or "")

    def to_json(self) -> FrozenDict:
        return FrozenDict(turn=self.turn, step=self.step, chunk=self.chunk)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AssistantChunk:
        return cls(data["turn"], data["step"], _map(data.get("chunk")))


@dataclass(frozen=True, slots=True)
class AssistantMessageEvent(_InStep):
    """``assistant/message``: a finished answer, or the visible prefix of one cut off by a cancel."""

    type: ClassVar[str] = "assistant/message"
    message: AssistantMessage
    usage: TokenUsage | None = None
    interrupted: bool = False

    @property
    def blocks(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.message.content)

    @property
    def text(self) -> str:
        return block_text(self.message.content)

    @property
    def reasoning(self) -> str:
        return "".join(str(b.get("text", "")) for b in self.message.content if b.get("type") == "reasoning")

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple(str(b.get("id")) for b in self.message.content if b.get("type") == "tool-call")

    @property
    def model(self) -> str | None:
        source = _map(self.message.source)
        return str(source["model"]) if source.get("model") else None

    def to_json(self) -> FrozenDict:
        data: dict[str, Any] = {"turn": self.turn, "step": self.step, "message": self.message.to_json()}
        if self.interrupted:
            data["interrupted"] = True
        if self.usage is not None:
            data["usage"] = self.usage
        return FrozenDict(data)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AssistantMessageEvent:
        message = message_view(_map(data.get("message")), AssistantMessage)
        return cls(
            data["turn"],
            data["step"],
            message,  # type: ignore[arg-type]
            _opt_map(data.get("usage")),
            bool(data.get("interrupted")),
        )


@dataclass(frozen=True, slots=True)
class ToolCallEvent(_InStep):
    """``tool/call``: a tool call starts."""

    type: ClassVar[str] = "tool/call"
    required: ClassVar[frozenset[str]] = frozenset({"turn", "step", "call_id", "name", "arguments"})
    call_id: str
    name: str
    arguments: str = ""
    """The raw JSON text the model produced."""


@dataclass(frozen=True, slots=True)
class ToolResultEvent(_InStep):
    """``tool/result``: a call's result message (one ``tool-result`` block, source ``tool``)."""

    type: ClassVar[str] = "tool/result"
    message: UserMessage
    error: ToolError | None = None
    """``{"name", "code"}`` when the call failed."""

    @property
    def block(self) -> Mapping[str, Any]:
        content = self.message.content
        return _map(content[0]) if content else _EMPTY

    @property
    def call_id(self) -> str:
        from_source = _map(self.message.source).get("call_id")
        return str(self.block.get("tool_call_id") or from_source or "")

    @property
    def is_error(self) -> bool:
        return bool(self.block.get("is_error"))

    @property
    def error_code(self) -> str | None:
        return str(self.error["code"]) if self.error and self.error.get("code") else None

    def to_json(self) -> FrozenDict:
        data: dict[str, Any] = {"turn": self.turn, "step": self.step, "message": self.message.to_json()}
        if self.error is not None:
            data["error"] = self.error
        return FrozenDict(data)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolResultEvent:
        message = message_view(_map(data.get("message")))
        return cls(data["turn"], data["step"], message, _opt_map(data.get("error")))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class LlmRetry(Record):
    """``llm/retry``: a failed request is about to be retried in the same step."""

    type: ClassVar[str] = "llm/retry"
    turn: int = 0
    step: int = 0
    attempt: int = 0
    """The attempt about to be made (2 for the first retry)."""
    delay_ms: int = 0
    failure: Failure = field(default_factory=lambda: Failure.from_json(_EMPTY))
    """Why the attempt failed (stored as ``{"message", "code", ...}``)."""

    def to_json(self) -> FrozenDict:
        return FrozenDict({
            "turn": self.turn,
            "step": self.step,
            "attempt": self.attempt,
            "delay_ms": self.delay_ms,
            "failure": self.failure.to_json(),
        })  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LlmRetry:
        return cls(
            data.get("turn", 0),
            data.get("step", 0),
            data.get("attempt", 0),
            data.get("delay_ms", 0),
            Failure.from_json(_map(data.get("failure"))),
        )


@dataclass(frozen=True, slots=True)
class ApprovalAsked(Record):
    """``approval/asked``: a tool that needs approval waits for a decision."""

    type: ClassVar[str] = "approval/asked"
    id: str = ""
    """nbagent's own id for this question (never the model's call id)."""
    tool: str = ""
    call_id: str = ""
    arguments_sha256: str | None = None
    """The SHA-256 of the call's raw arguments: what the approval approves (absent in older logs)."""
    turn: int | None = None
    step: int | None = None

    def to_json(self) -> FrozenDict:
        return FrozenDict(_approval(self), turn=self.turn, step=self.step)


@dataclass(frozen=True, slots=True)
class ApprovalDecided(Record):
    """``approval/decided``: what became of an asked approval (exactly one per ``approval/asked``)."""

    type: ClassVar[str] = "approval/decided"
    id: str = ""
    tool: str | None = ""
    call_id: str | None = ""
    arguments_sha256: str | None = None
    outcome: ApprovalOutcome = "unavailable"
    scope: ApprovalScope | None = None
    """``"session"`` when an ``allowed-once`` came from an allowance for the rest of the session
    (policy, or "allow for this session"); absent for a one-off decision and in older logs."""

    @property
    def shown_outcome(self) -> str:
        """The outcome as views name it: ``allowed-session`` for a session-wide allowance."""
        return (
            "allowed-session" if self.scope == "session" and self.outcome == "allowed-once" else self.outcome
        )

    def to_json(self) -> FrozenDict:
        data = FrozenDict(_approval(self), outcome=self.outcome)
        return FrozenDict(data, scope=self.scope) if self.scope is not None else data


def _approval(record: ApprovalAsked | ApprovalDecided) -> dict[str, Any]:
    """The fields both approval events start with (``arguments_sha256`` only when known)."""
    data = {"id": record.id, "tool": record.tool, "call_id": record.call_id}
    if record.arguments_sha256 is not None:
        data["arguments_sha256"] = record.arguments_sha256
    return data


TypedEvent = (
    Splice
    | TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | UserMessageEvent
    | RequestHeader
    | RequestEstimate
    | AssistantChunk
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | LlmRetry
    | ApprovalAsked
    | ApprovalDecided
    | SessionForked
    | SessionReplayed
    | UnknownEvent
)
"""What :func:`parse_event` returns (every record registered by defining it)."""

INBOX_SPLICED: Final = Splice.type
TURN_START: Final = TurnStart.type
TURN_END: Final = TurnEnd.type
STEP_START: Final = StepStart.type
STEP_END: Final = StepEnd.type
USER_MESSAGE: Final = UserMessageEvent.type
REQUEST_HEADER: Final = RequestHeader.type
REQUEST_ESTIMATE: Final = RequestEstimate.type
ASSISTANT_CHUNK: Final = AssistantChunk.type
ASSISTANT_MESSAGE: Final = AssistantMessageEvent.type
TOOL_CALL: Final = ToolCallEvent.type
TOOL_RESULT: Final = ToolResultEvent.type
LLM_RETRY: Final = LlmRetry.type
APPROVAL_ASKED: Final = ApprovalAsked.type
APPROVAL_DECIDED: Final = ApprovalDecided.type
SESSION_FORKED: Final = SessionForked.type
SESSION_REPLAYED: Final = SessionReplayed.type

MESSAGE_EVENTS: Final = frozenset({USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})
"""The event types whose ``message`` is model-visible (SPEC §4, "model-visible means logged")."""


# -- the adapter -------------------------------------------------------------------------------------


def parse_event(event: Event) -> TypedEvent:
    """The typed record of a stored event: the one place where event payloads are read as dicts.

    Unknown types become :class:`UnknownEvent`; a known type missing a required field raises
    :class:`EventParseError` naming the seq and the field.
    """
    cls = record_type(event.type)
    if cls is None or not isinstance(event.data, Mapping):
        record: Record = UnknownEvent(event.type, event.data)
    else:
        try:
            record = cls.from_json(event.data)
        except KeyError as exc:
            raise EventParseError(
                f"event seq {event.seq} ({event.type}) has no {exc.args[0]!r} field; the log was not "
                "written by a compatible nbagent (open it with the version that wrote it)"
            ) from None
    _set(record, "seq", event.seq)
    _set(record, "time", event.time)
    return record  # type: ignore[return-value]


_set = object.__setattr__

R = TypeVar("R", bound=Record)


def parse_as(event: Event, cls: type[R]) -> R | None:
    """``event``'s record if it is a readable ``cls`` (the type is checked before anything is
    parsed), else ``None``: for a reader looking for one kind of event in any log, damaged ones too."""
    try:
        record = parse_event(event) if event.type == cls.type else None
    except EventParseError:
        return None
    return record if isinstance(record, cls) else None
