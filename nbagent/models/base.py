"""The model seam: what the loop sends (``ModelRequest``), what a model streams back (chunks)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from nbagent._json import FrozenDict
from nbagent.log.messages import Message
from nbagent.log.vocabulary import Failure

FinishKind = Literal["stop", "tool-calls", "max-tokens", "error"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of visible answer text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text."""

    text: str
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """One complete tool call; ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str
    type: Literal["tool-call"] = "tool-call"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by the provider. ``input_tokens`` counts every input token, including
    the ``cached_input_tokens`` read from the provider's prompt cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    type: Literal["usage"] = "usage"
    cached_input_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        """The stored form (``cached_input_tokens`` only when the provider reported some)."""
        out: dict[str, Any] = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cached_input_tokens:
            out["cached_input_tokens"] = self.cached_input_tokens
        return out


@dataclass(frozen=True, slots=True)
class Finish:
    """The last chunk of every stream."""

    kind: FinishKind
    failure: Failure | None = None
    type: Literal["finish"] = "finish"


Chunk = TextDelta | ReasoningDelta | ToolCallChunk | Usage | Finish


def chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    """The stored form of a chunk (``assistant/chunk.data.chunk``)."""
    if isinstance(chunk, TextDelta | ReasoningDelta):
        return {"type": chunk.type, "text": chunk.text}
    if isinstance(chunk, ToolCallChunk):
        return {"type": "tool-call", "id": chunk.id, "name": chunk.name, "arguments": chunk.arguments}
    if isinstance(chunk, Usage):
        return {"type": "usage", **chunk.to_json()}
    if isinstance(chunk, Finish):
        out: dict[str, Any] = {"type": "finish", "kind": chunk.kind}
        if chunk.failure is not None:
            out["failure"] = chunk.failure.to_json()
        return out
    raise TypeError(f"a model yielded {type(chunk).__name__}; expected a chunk from nbagent.models")


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request: the derived history, the tools' JSON schemas, and the system prompt."""

    messages: tuple[Message, ...]
    tools: tuple[FrozenDict, ...] = ()
    system: str | None = None
    turn: int = 0
    step: int = 0
    attempt: int = 1
    log_length: int = 0
    """How many events were durable when the request was dispatched (for invariant checks)."""


class CancelSignalLike(Protocol):
    @property
    def cancelled(self) -> bool: ...

    async def wait(self) -> None: ...


@runtime_checkable
class Model(Protocol):
    """A model: ``stream(request, signal)`` is an async generator of chunks ending in ``Finish``."""

    name: str

    def stream(self, request: ModelRequest, signal: CancelSignalLike) -> AsyncIterator[Chunk]: ...


class ModelError(Exception):
    """Raised by a model (or its adapter) to fail a request with a known failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def model_provider(model: Model) -> str:
    """The provider half of a model's name (``"openai:gpt-4.1"`` → ``"openai"``)."""
    name = getattr(model, "name", "model")
    return getattr(model, "provider", None) or (name.split(":", 1)[0] if ":" in name else name)
