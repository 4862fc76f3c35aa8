"""``ScriptedModel``: a deterministic model for tests and tutorials, one response per request."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from nbagent.errors import ScriptExhaustedError
from nbagent.log.vocabulary import Failure
from nbagent.models.base import (
    CancelSignalLike,
    Chunk,
    Finish,
    FinishKind,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
)


@dataclass(frozen=True)
class ToolCall:
    """A scripted tool call; ``id`` defaults to ``call_<request>_<index>``."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Response:
    """One scripted answer.

    ``finish`` defaults to ``"tool-calls"`` when there are calls, else ``"stop"``; ``failure``
    (a code such as ``"RATE_LIMIT"`` or a :class:`Failure`) makes the request fail; ``chunk_size``
    streams the text in pieces of that many characters, ``chunk_delay`` seconds apart.
    """

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    finish: FinishKind | None = None
    usage: Usage | None = None
    failure: str | Failure | None = None
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    reasoning: str | None = None


ScriptItem = Union[Response, str, Callable[[ModelRequest], "Response | str | Awaitable[Response | str]"]]  # noqa: UP007


class ScriptedModel:
    """Serves each request with the next scripted response; ``requests`` keeps every request.

    A response may be a :class:`Response`, a plain string (a text answer), or a sync/async callable
    that receives the :class:`ModelRequest` and returns one, so tests can gate and act mid-request.
    """

    def __init__(self, responses: Iterable[ScriptItem] = (), *, name: str = "scripted") -> None:
        self.responses: list[ScriptItem] = list(responses)
        self.requests: list[ModelRequest] = []
        self.name = name
        self.provider = "scripted"

    def add(self, *responses: ScriptItem) -> None:
        """Append more responses to the script."""
        self.responses.extend(responses)

    async def stream(self, request: ModelRequest, signal: CancelSignalLike) -> AsyncIterator[Chunk]:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self.responses):
            raise ScriptExhaustedError(
                f"ScriptedModel has {len(self.responses)} response(s) and received request "
                f"#{index + 1}; add more responses to the script"
            )
        item: ScriptItem | Awaitable[Response | str] = self.responses[index]
        if callable(item) and not isinstance(item, Response):
            item = item(request)
            if inspect.isawaitable(item):
                item = await item
        if isinstance(item, str):
            item = Response(item)
        if not isinstance(item, Response):
            raise TypeError(f"script item #{index + 1} produced {type(item).__name__}, not a Response")
        async for chunk in _play(item, index, signal):
            yield chunk


async def _play(r: Response, index: int, signal: CancelSignalLike) -> AsyncIterator[Chunk]:
    if r.reasoning:
        yield ReasoningDelta(r.reasoning)
    if r.text:
        size = r.chunk_size or len(r.text)
        for start in range(0, len(r.text), size):
            if start and r.chunk_delay:
                await asyncio.sleep(r.chunk_delay)
            if signal.cancelled:
                return
            yield TextDelta(r.text[start : start + size])
    if r.failure is not None:
        failure = (
            r.failure
            if isinstance(r.failure, Failure)
            else Failure(f"scripted {r.failure} failure", code=r.failure)
        )
        yield Finish("error", failure)
        return
    for i, call in enumerate(r.tool_calls):
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        yield ToolCallChunk(call.id or f"call_{index + 1}_{i + 1}", call.name, args)
    if r.usage is not None:
        yield r.usage
    yield Finish(r.finish or ("tool-calls" if r.tool_calls else "stop"))
