"""The durable event envelope, the vocabulary of core event types (SPEC §4), and their typed records.

``Event`` is what the log stores and the journal writes: ``data`` stays plain JSON, and the write
path never builds anything else. Readers (the views, ``nbagent.testing``, owned runs) turn an
envelope into a small frozen record with :func:`parse_event`, the one adapter, and ``match`` on the
record's class instead of reading dict keys. A type this version does not know parses to
:class:`UnknownEvent`, so old readers tolerate new logs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, NamedTuple


class Event(NamedTuple):
    """One durable fact of a session log; ``data`` is plain JSON as stored."""

    seq: int
    time: int
    type: str
    data: Any


INBOX_SPLICED: Final = "agent/inbox/spliced"
TURN_START: Final = "turn/start"
TURN_END: Final = "turn/end"
STEP_START: Final = "step/start"
STEP_END: Final = "step/end"
USER_MESSAGE: Final = "user/message"
REQUEST_HEADER: Final = "request/header"
ASSISTANT_CHUNK: Final = "assistant/chunk"
ASSISTANT_MESSAGE: Final = "assistant/message"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
LLM_RETRY: Final = "llm/retry"
APPROVAL_ASKED: Final = "approval/asked"
APPROVAL_DECIDED: Final = "approval/decided"

MESSAGE_EVENTS: Final = frozenset({USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})
"""The event types whose ``message`` is model-visible (SPEC §4, "model-visible means logged")."""

NEXT_TURN: Final = "next-turn"
NEXT_STEP: Final = "next-step"

_EMPTY: Final[Mapping[str, Any]] = {}


def block_text(content: Any) -> str:
    """The concatenated ``text`` blocks of a stored message's content."""
    return "".join(
        b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"
    )


# -- the records -------------------------------------------------------------------------------------
# Every record starts with the envelope's ``seq`` and ``time``; ``type`` is the class's discriminator.
# Nested messages stay the stored JSON mappings (the views read them; the model history has its own
# parser in ``projections``).


@dataclass(frozen=True, slots=True)
class Splice:
    """``agent/inbox/spliced``: one inbox mutation (an insertion, a claim, a cancel, a replacement)."""

    type: ClassVar[str] = INBOX_SPLICED
    seq: int
    time: int
    target: str
    """``next-step`` or ``next-turn``."""
    start: int
    removed_count: int
    inserted: tuple[Mapping[str, Any], ...]
    """The stored ``UserMessage`` JSON of each inserted message."""
    outcome: str | None
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


@dataclass(frozen=True, slots=True)
class TurnStart:
    """``turn/start``: a driver opened turn ``turn``."""

    type: ClassVar[str] = TURN_START
    seq: int
    time: int
    turn: int


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """``turn/end``: every exit from an opened turn, with its ``reason``."""

    type: ClassVar[str] = TURN_END
    seq: int
    time: int
    turn: int
    reason: Mapping[str, Any]
    """``{"kind": completed|max-tokens|blocked|aborted|error|interrupted, ...}`` as stored."""

    @property
    def kind(self) -> str:
        return str(self.reason.get("kind", "completed"))

    @property
    def cause(self) -> str | None:
        """Why an ``aborted`` turn was cancelled (``user``, ``close``…)."""
        inner = self.reason.get("reason")
        return str(inner.get("kind")) if isinstance(inner, Mapping) and inner.get("kind") else None

    @property
    def error(self) -> Mapping[str, Any]:
        """``{"message", "code", "status"?}`` of an ``error`` turn, else empty."""
        err = self.reason.get("error")
        return err if isinstance(err, Mapping) else _EMPTY


@dataclass(frozen=True, slots=True)
class StepStart:
    type: ClassVar[str] = STEP_START
    seq: int
    time: int
    turn: int
    step: int


@dataclass(frozen=True, slots=True)
class StepEnd:
    type: ClassVar[str] = STEP_END
    seq: int
    time: int
    turn: int
    step: int


@dataclass(frozen=True, slots=True)
class UserMessageEvent:
    """``user/message``: one message of an entered batch (the model sees it)."""

    type: ClassVar[str] = USER_MESSAGE
    seq: int
    time: int
    message: Mapping[str, Any]
    """The stored ``UserMessage`` JSON (``id``, ``role``, ``content``, ``source``)."""

    @property
    def id(self) -> str:
        return str(self.message.get("id", ""))

    @property
    def source(self) -> Mapping[str, Any]:
        source = self.message.get("source")
        return source if isinstance(source, Mapping) else _EMPTY

    @property
    def is_typed_prompt(self) -> bool:
        """SPEC §2.3: a typed prompt is exactly a message whose source kind is ``user``."""
        return self.source.get("kind") == "user"


@dataclass(frozen=True, slots=True)
class RequestHeader:
    type: ClassVar[str] = REQUEST_HEADER
    seq: int
    time: int
    model: str
    reason: str
    """``initial``, ``resume`` or ``change``."""
    data: Mapping[str, Any]
    """The whole stored header (``system``, ``tools``…)."""


@dataclass(frozen=True, slots=True)
class AssistantChunk:
    type: ClassVar[str] = ASSISTANT_CHUNK
    seq: int
    time: int
    turn: int
    step: int
    chunk: Mapping[str, Any]

    @property
    def kind(self) -> str:
        """``text``, ``reasoning``, ``tool-call``…"""
        return str(self.chunk.get("type", ""))

    @property
    def text(self) -> str:
        return str(self.chunk.get("text") or "")


@dataclass(frozen=True, slots=True)
class AssistantMessageEvent:
    """``assistant/message``: a finished answer, or the visible prefix of one cut off by a cancel."""

    type: ClassVar[str] = ASSISTANT_MESSAGE
    seq: int
    time: int
    turn: int
    step: int
    message: Mapping[str, Any]
    usage: Mapping[str, Any] | None
    interrupted: bool

    @property
    def blocks(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(b for b in self.message.get("content") or () if isinstance(b, Mapping))

    @property
    def text(self) -> str:
        return block_text(self.message.get("content"))

    @property
    def reasoning(self) -> str:
        return "".join(str(b.get("text", "")) for b in self.blocks if b.get("type") == "reasoning")

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple(str(b.get("id")) for b in self.blocks if b.get("type") == "tool-call")

    @property
    def model(self) -> str | None:
        source = self.message.get("source")
        return str(source["model"]) if isinstance(source, Mapping) and source.get("model") else None


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """``tool/call``: a tool call starts."""

    type: ClassVar[str] = TOOL_CALL
    seq: int
    time: int
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """``tool/result``: a call's result message (one ``tool-result`` block, source ``tool``)."""

    type: ClassVar[str] = TOOL_RESULT
    seq: int
    time: int
    turn: int
    step: int
    message: Mapping[str, Any]
    error: Mapping[str, Any] | None
    """``{"name", "code"}`` when the call failed."""

    @property
    def block(self) -> Mapping[str, Any]:
        content = self.message.get("content") or ()
        first = content[0] if content else None
        return first if isinstance(first, Mapping) else _EMPTY

    @property
    def call_id(self) -> str:
        source = self.message.get("source")
        from_source = source.get("call_id") if isinstance(source, Mapping) else None
        return str(self.block.get("tool_call_id") or from_source or "")

    @property
    def is_error(self) -> bool:
        return bool(self.block.get("is_error"))

    @property
    def error_code(self) -> str | None:
        return str(self.error["code"]) if self.error and self.error.get("code") else None


@dataclass(frozen=True, slots=True)
class LlmRetry:
    """``llm/retry``: a failed request is about to be retried in the same step."""

    type: ClassVar[str] = LLM_RETRY
    seq: int
    time: int
    turn: int
    step: int
    attempt: int
    """The attempt about to be made (2 for the first retry)."""
    delay_ms: int
    failure: Mapping[str, Any]
    """``{"code", "message", ...}`` of the failed attempt."""


@dataclass(frozen=True, slots=True)
class ApprovalAsked:
    """``approval/asked``: a tool that needs approval waits for a decision."""

    type: ClassVar[str] = APPROVAL_ASKED
    seq: int
    time: int
    id: str
    tool: str
    call_id: str
    turn: int | None
    step: int | None


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """``approval/decided``: ``allowed-once``, ``rejected``, ``cancelled`` or ``unavailable``."""

    type: ClassVar[str] = APPROVAL_DECIDED
    seq: int
    time: int
    id: str
    tool: str
    call_id: str
    outcome: str


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event type this version does not know (kept, never an error)."""

    seq: int
    time: int
    type: str  # type: ignore[misc]
    data: Any = field(default=None)


TypedEvent = (
    Splice
    | TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | UserMessageEvent
    | RequestHeader
    | AssistantChunk
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | LlmRetry
    | ApprovalAsked
    | ApprovalDecided
    | UnknownEvent
)


# -- the adapter -------------------------------------------------------------------------------------


def _opt_map(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


_PARSERS: Final[dict[str, Callable[[int, int, Mapping[str, Any]], TypedEvent]]] = {
    INBOX_SPLICED: lambda s, t, d: Splice(
        s, t, d["target"], d.get("start", 0), d.get("removed_count", 0),
        tuple(d.get("inserted") or ()), d.get("outcome"),
    ),
    TURN_START: lambda s, t, d: TurnStart(s, t, d["turn"]),
    TURN_END: lambda s, t, d: TurnEnd(s, t, d["turn"], _map(d.get("reason"))),
    STEP_START: lambda s, t, d: StepStart(s, t, d["turn"], d["step"]),
    STEP_END: lambda s, t, d: StepEnd(s, t, d["turn"], d["step"]),
    USER_MESSAGE: lambda s, t, d: UserMessageEvent(s, t, d),
    REQUEST_HEADER: lambda s, t, d: RequestHeader(s, t, str(d.get("model", "")), str(d.get("reason", "")), d),
    ASSISTANT_CHUNK: lambda s, t, d: AssistantChunk(s, t, d["turn"], d["step"], _map(d.get("chunk"))),
    ASSISTANT_MESSAGE: lambda s, t, d: AssistantMessageEvent(
        s, t, d["turn"], d["step"], _map(d.get("message")), _opt_map(d.get("usage")), bool(d.get("interrupted")),
    ),
    TOOL_CALL: lambda s, t, d: ToolCallEvent(
        s, t, d["turn"], d["step"], str(d["call_id"]), str(d["name"]), str(d.get("arguments", "")),
    ),
    TOOL_RESULT: lambda s, t, d: ToolResultEvent(
        s, t, d["turn"], d["step"], _map(d.get("message")), _opt_map(d.get("error")),
    ),
    LLM_RETRY: lambda s, t, d: LlmRetry(
        s, t, d.get("turn", 0), d.get("step", 0), d.get("attempt", 0), d.get("delay_ms", 0), _map(d.get("failure")),
    ),
    APPROVAL_ASKED: lambda s, t, d: ApprovalAsked(
        s, t, str(d.get("id", "")), str(d.get("tool", "")), str(d.get("call_id", "")), d.get("turn"), d.get("step"),
    ),
    APPROVAL_DECIDED: lambda s, t, d: ApprovalDecided(
        s, t, str(d.get("id", "")), str(d.get("tool", "")), str(d.get("call_id", "")), str(d.get("outcome", "")),
    ),
}  # fmt: skip


class EventParseError(ValueError):
    """A stored event of a known type lacks a field its record needs."""


def parse_event(event: Event) -> TypedEvent:
    """The typed record of a stored event: the one place where event payloads are read as dicts.

    Unknown types become :class:`UnknownEvent`; a known type missing a required field raises
    :class:`EventParseError` naming the seq and the field.
    """
    parser = _PARSERS.get(event.type)
    if parser is None or not isinstance(event.data, Mapping):
        return UnknownEvent(event.seq, event.time, event.type, event.data)
    try:
        return parser(event.seq, event.time, event.data)
    except KeyError as exc:
        raise EventParseError(
            f"event seq {event.seq} ({event.type}) has no {exc.args[0]!r} field; the log was not written "
            "by a compatible nbagent (open it with the version that wrote it)"
        ) from None
