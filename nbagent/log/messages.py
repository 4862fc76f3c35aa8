"""Identified, frozen message values: what the model sees, what the log stores, what the inbox holds.

Blocks and sources are typed as discriminated unions of ``TypedDict``s (on ``type`` and ``kind``):
at run time they stay deep-frozen plain JSON (``FrozenDict``), exactly what the log stores, so a
message costs no conversion on the hot path and its stored JSON never changes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, field_validator
from pydantic_core import core_schema
from typing_extensions import NotRequired, TypedDict

from nbagent._json import FrozenDict, FrozenList, check_str, freeze

# -- blocks (SPEC §2.2) ------------------------------------------------------------------------------


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    mime: NotRequired[str]
    """Left out, it is guessed from ``path`` (or read from a ``data:`` URL)."""
    data: NotRequired[str]
    """Base64 bytes (or ``path``)."""
    path: NotRequired[str]


class ToolCallBlock(TypedDict):
    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str
    """The raw JSON text the model produced."""


class ToolResultBlock(TypedDict):
    type: Literal["tool-result"]
    tool_call_id: str
    content: list[Block]
    is_error: bool


class ReasoningBlock(TypedDict):
    type: Literal["reasoning"]
    text: str


Block = TextBlock | ImageBlock | ToolCallBlock | ToolResultBlock | ReasoningBlock
"""A content block, discriminated by ``type``."""

# -- sources (SPEC §2.3) -----------------------------------------------------------------------------


class CellRef(TypedDict, total=False):
    execution_count: int | None
    cell_id: str | None


class UserSource(TypedDict):
    """A typed prompt (``%followup``/``%steer`` or the API)."""

    kind: Literal["user"]
    cell: NotRequired[CellRef]


class CellSource(TypedDict):
    kind: Literal["cell"]
    label: NotRequired[str]
    cell: NotRequired[CellRef]


class DataFrameSource(TypedDict):
    kind: Literal["dataframe"]
    name: str | None
    library: str
    shape: list[int | None]
    """``[rows, columns]``; rows is None for a lazy frame (counting them would run its query)."""
    columns: list[str]
    """The column names."""
    truncated: list[str]
    form: Literal["snapshot", "table"]
    """``table`` for a small frame sent whole, as its rows."""
    lazy: NotRequired[bool]
    table: NotRequired[dict[str, Any]]
    head_rows: NotRequired[list[int]]
    cell: NotRequired[CellRef]
    label: NotRequired[str]
    """``%inject --label``'s name for it."""


class VariableSource(TypedDict):
    kind: Literal["variable"]
    name: str
    type: str
    form: NotRequired[str]
    """Which text was used (``str``, ``markdown``, ...)."""
    cut: NotRequired[dict[str, Any]]
    """What was left out, when something was."""
    label: NotRequired[str]
    """``%inject --label``'s name for it."""


class ErrorSource(TypedDict):
    kind: Literal["error"]
    ename: str
    evalue: str


class SessionReferenceSource(TypedDict):
    kind: Literal["session-reference"]
    form: Literal["recall"]
    references: list[Any]


class PluginSource(TypedDict):
    kind: Literal["plugin"]
    plugin: str
    form: NotRequired[str]
    summary: NotRequired[str]
    """One line for the views (an MCP notice's)."""


class NotebookSource(TypedDict):
    kind: Literal["notebook"]
    action: str
    proposal: Any
    cell: NotRequired[CellRef]


class ToolSource(TypedDict):
    kind: Literal["tool"]
    call_id: str


class NoteSource(TypedDict):
    """A message added to a replayed turn by the person replaying it (``%agent replay --add``)."""

    kind: Literal["note"]


class ModelSource(TypedDict):
    kind: Literal["model"]
    provider: str
    model: str


Source = (
    UserSource
    | CellSource
    | DataFrameSource
    | VariableSource
    | ErrorSource
    | SessionReferenceSource
    | PluginSource
    | NotebookSource
    | ToolSource
    | NoteSource
    | ModelSource
)
"""Who produced a message, discriminated by ``kind``; producers add their own fields, and consumers
tolerate kinds they do not know (a newer log may hold one)."""

SourceKind = Literal[
    "user",
    "cell",
    "dataframe",
    "variable",
    "error",
    "session-reference",
    "plugin",
    "notebook",
    "tool",
    "note",
    "model",
]


class _PlainJson:
    """Pydantic sees a field's value as plain JSON (its own validator checks and freezes it); type
    checkers see the discriminated union the field is annotated with."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.any_schema()


PLAIN_JSON = _PlainJson()

USER_SOURCE: FrozenDict = FrozenDict({"kind": "user"})
M = TypeVar("M", bound="Message")


_ids = random.Random()  # seeded from os.urandom; its own, so random.seed() in user code cannot repeat ids
os.register_at_fork(after_in_child=_ids.seed)  # a forked process draws its own ids


def _new_id() -> str:
    """A random (version 4) UUID string; formatted directly, at a tenth of ``str(uuid4())``'s cost.

    The bits come from a private generator seeded by ``os.urandom``, not from ``os.urandom`` per
    call: that call releases the GIL, and with many threads injecting at once each release costs a
    thread switch (the ids need to be unique, not secret).
    """
    h = f"{_ids.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def freeze_content(content: Any) -> tuple[FrozenDict, ...]:
    """Validate and deep-freeze message content: a sequence of blocks, each one of the shapes of
    SPEC §2.2 (:func:`check_block`). The way in only: a message read back from a log is not checked
    again (:func:`message_from_json`), so an older or newer log's block this version does not know
    stays an opaque block instead of failing the resume."""
    if isinstance(content, str):
        content = [text_block(content)]
    if isinstance(content, Mapping) or not isinstance(content, Iterable):
        raise TypeError(f"message content must be a list of blocks, got {type(content).__name__}")
    blocks = freeze(list(content), "content")
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise TypeError(f"content[{i}] must be a block dict with a str 'type', got {block!r}")
        check_block(block, f"content[{i}]")
    return tuple(blocks)


class BlockError(ValueError):
    """A content block that is none of the shapes of SPEC §2.2; the message says which block (by
    its index) and what is wrong with it."""


_BLOCK_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "image": (),
    "tool-call": (("id", str), ("name", str), ("arguments", str)),
    "tool-result": (("tool_call_id", str), ("content", list), ("is_error", bool)),
    "reasoning": (("text", str),),
}
"""Each block type's required fields and their JSON types (a producer may add fields of its own).
An image's ``mime`` may be left out when its ``path`` (or a ``data:`` URL) says it, as the model
adapters read it (``nbagent.models._sdk_support.image_data``)."""

BLOCK_TYPES: frozenset[str] = frozenset(_BLOCK_FIELDS)
"""The block types this version writes (SPEC §2.2)."""


def check_block(block: Mapping[str, Any], where: str = "block") -> None:
    """Raise :class:`BlockError` unless ``block`` (plain JSON, e.g. deep-frozen) is one of the block
    shapes of SPEC §2.2: its ``type`` known and its required fields there with their types; an
    image holds ``data`` or ``path``; a tool result's ``content`` is blocks, checked the same way.
    ``where`` names the block in the error (``content[2]``)."""
    kind = block.get("type")
    fields = _BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        known = ", ".join(repr(t) for t in _BLOCK_FIELDS)
        raise BlockError(f"{where} has type {kind!r}, which is not a block type (one of {known})")
    for name, json_type in fields:
        value = block.get(name)
        if type(value) is not json_type and not isinstance(value, json_type):
            got = "missing" if name not in block else f"a {type(value).__name__}"
            what = {str: "a str", list: "a list of blocks", bool: "a bool"}[json_type]
            raise BlockError(f"{where} ({kind}) needs {name!r} as {what}, got {got}")
    if kind == "image":
        if not any(isinstance(block.get(k), str) for k in ("data", "path")):
            raise BlockError(f"{where} (image) needs 'data' (base64) or 'path' as a str, got neither")
        if "mime" in block and not isinstance(block["mime"], str):
            raise BlockError(f"{where} (image) needs 'mime' as a str, got a {type(block['mime']).__name__}")
    if kind == "tool-result":
        for j, inner in enumerate(block["content"]):
            if not isinstance(inner, Mapping):
                raise BlockError(f"{where}.content[{j}] must be a block dict, got {inner!r}")
            check_block(inner, f"{where}.content[{j}]")


def freeze_source(source: Any) -> FrozenDict:
    """Validate and deep-freeze a message source: a dict with a str ``kind``."""
    if source is None:
        return USER_SOURCE
    frozen = freeze(source, "source")
    if not isinstance(frozen, dict) or not isinstance(frozen.get("kind"), str):
        raise TypeError(f"source must be a dict with a str 'kind', got {source!r}")
    return cast(FrozenDict, frozen)  # freeze makes every dict a FrozenDict


class Message(BaseModel):
    """A frozen message of the model-visible history."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True)

    id: str
    """Stable identity: kept by a rewrite, fresh for an addition."""
    role: Literal["user", "assistant"]
    """``user`` for prompts, injected context and tool results; ``assistant`` for model answers."""
    content: Annotated[tuple[Block, ...], PLAIN_JSON]
    """Blocks sent to the model verbatim (deep-frozen plain JSON, checked by ``freeze_content``)."""
    source: Annotated[Source, PLAIN_JSON]
    """The producer (deep-frozen plain JSON with a ``kind``, checked by ``freeze_source``)."""

    @field_validator("content", mode="before")
    @classmethod
    def _freeze_content(cls, value: Any) -> tuple[FrozenDict, ...]:
        return freeze_content(value)

    @field_validator("source", mode="before")
    @classmethod
    def _freeze_source(cls, value: Any) -> FrozenDict:
        return freeze_source(value)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not value:
            raise ValueError("message id must be a non-empty string")
        return check_str(value, "message id")

    def to_json(self) -> FrozenDict:
        """The message as stored in events (plain JSON, frozen)."""
        return FrozenDict(id=self.id, role=self.role, content=FrozenList(self.content), source=self.source)

    @property
    def kind(self) -> str:
        """The source kind (``"user"`` means a typed prompt)."""
        return str(self.source.get("kind", ""))

    @property
    def plain_text(self) -> str:
        """The concatenated text of the message's text blocks."""
        return message_text(self)

    @property
    def first_line(self) -> str:
        """The first non-empty line of the text, or a short description of the first block."""
        for line in message_text(self).splitlines():
            if line.strip():
                return line.strip()
        if self.content:
            return f"[{self.content[0].get('type')}]"
        return ""


_FIELDS = frozenset({"id", "role", "content", "source"})
_set = object.__setattr__


def _construct(cls: type[M], id: str, role: str, content: tuple[Any, ...], source: Any) -> M:
    """An already-validated message, as ``cls.model_construct`` builds it, at a third of its cost
    (the hot path of every delivery and every model answer)."""
    message = cls.__new__(cls)
    _set(message, "__dict__", {"id": id, "role": role, "content": content, "source": source})
    _set(message, "__pydantic_fields_set__", set(_FIELDS))
    _set(message, "__pydantic_extra__", None)
    _set(message, "__pydantic_private__", None)
    return message


class UserMessage(Message):
    """A user-role message: a typed prompt, injected context, or a tool result."""

    role: Literal["user"] = "user"
    id: str = ""

    def __init__(self, **data: Any) -> None:
        if not data.get("id"):
            data["id"] = _new_id()
        data.setdefault("source", None)
        super().__init__(**data)

    @classmethod
    def text(cls, text: str, source: Source | None = None, *, id: str | None = None) -> UserMessage:
        """A one-text-block message; the source defaults to the user."""
        if not isinstance(text, str):
            raise TypeError(f"UserMessage.text needs a str, got {type(text).__name__}")
        if id is not None and not isinstance(id, str):
            raise TypeError(f"a message id must be a str, got {type(id).__name__}")
        # The block is built here from a str, so only the text and the source need validating.
        return _construct(
            cls,
            check_str(id, "message id") if id else _new_id(),
            "user",
            (FrozenDict(type="text", text=text if text.isascii() else check_str(str(text), "text")),),
            freeze_source(source),
        )


class AssistantMessage(Message):
    """A model answer; its source is ``{"kind": "model", "provider", "model"}``."""

    role: Literal["assistant"] = "assistant"

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The answer's ``tool-call`` blocks, in the model's order."""
        return tuple(cast(ToolCallBlock, b) for b in self.content if b.get("type") == "tool-call")


def message_text(message: Message) -> str:
    """The concatenated text blocks of any message."""
    return "".join(cast(TextBlock, b).get("text", "") for b in message.content if b.get("type") == "text")


def text_block(text: str) -> FrozenDict:
    return FrozenDict(type="text", text=text)


def coerce_user_message(value: UserMessage | str) -> UserMessage:
    """Accept a ``UserMessage`` or a ``str`` (a user-sourced text message)."""
    if isinstance(value, UserMessage):
        return value
    if isinstance(value, str):
        return UserMessage.text(value)
    raise TypeError(f"expected a UserMessage or str, got {type(value).__name__}")


def message_view(data: Mapping[str, Any], cls: type[Message] | None = None) -> Message:
    """A message read back from a stored event, for readers: not deep-frozen, and tolerant of a
    damaged record (missing parts read as empty), since views must show any log."""
    role = data.get("role")
    content = data.get("content")
    source = data.get("source")
    if type(content) is not list or not all(type(b) is dict or isinstance(b, Mapping) for b in content):
        content = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list | tuple) else ()
    return _construct(
        cls or (AssistantMessage if role == "assistant" else UserMessage),
        str(data.get("id") or ""),
        role if isinstance(role, str) else "user",
        tuple(content),
        source if isinstance(source, Mapping) else FrozenDict(),
    )


def message_from_json(data: Mapping[str, Any]) -> Message:
    """Rebuild a frozen message from its stored JSON (trusted: came from our own log)."""
    role = data.get("role")
    cls: type[Message] = AssistantMessage if role == "assistant" else UserMessage
    return _construct(
        cls,
        data["id"],
        cast(str, role),
        tuple(freeze(data["content"], "content")),
        freeze(data["source"], "source"),
    )


def tool_result_message(
    call_id: str, content: Iterable[Block], *, is_error: bool = False, id: str | None = None
) -> UserMessage:
    """A user-role message holding exactly one ``tool-result`` block."""
    block = FrozenDict(
        type="tool-result",
        tool_call_id=str(call_id),
        content=freeze(list(content), "tool result content"),
        is_error=bool(is_error),
    )
    source = FrozenDict(kind="tool", call_id=str(call_id))
    return _construct(UserMessage, id or _new_id(), "user", (block,), source)


def assistant_message(
    content: Iterable[Block], *, provider: str, model: str, id: str | None = None
) -> AssistantMessage:
    """An assistant answer from blocks the loop assembled (validated by :func:`freeze_content`)."""
    source = FrozenDict(kind="model", provider=str(provider), model=str(model))
    return _construct(AssistantMessage, id or _new_id(), "assistant", freeze_content(list(content)), source)
