"""``EchoModel``: the offline default, answering with an exact account of what it received."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

from nbagent.log.messages import Message, TextBlock, ToolResultBlock, message_text
from nbagent.models.base import (
    CancelSignalLike,
    Chunk,
    Finish,
    ModelRequest,
    TextDelta,
)


def _describe(message: Message) -> str:
    kind = message.source.get("kind", "?")
    first = message.first_line
    if len(first) > 100:
        first = first[:99] + "…"
    if message.content and message.content[0].get("type") == "tool-result":
        block = cast(ToolResultBlock, message.content[0])
        texts = (
            cast(TextBlock, b).get("text", "") for b in block.get("content", ()) if b.get("type") == "text"
        )
        inner = next(texts, "")
        first = f"result of {block.get('tool_call_id')}: {inner.splitlines()[0] if inner else ''}"
    elif message.role == "assistant" and not message_text(message).strip():
        calls = [str(b.get("name")) for b in message.content if b.get("type") == "tool-call"]
        if calls:
            first = "calls " + ", ".join(calls)
    return f"{message.role} · {kind} · {first}"


def echo_text(request: ModelRequest) -> str:
    """The echo answer for ``request``: one numbered line per message, in order."""
    n = len(request.messages)
    lines = [f"echo: I received {n} message{'s' if n != 1 else ''}."]
    lines += [f"{i}. {_describe(m)}" for i, m in enumerate(request.messages, 1)]
    return "\n".join(lines)


class EchoModel:
    """Answers every request with the list of messages it received (role · source kind · first line).

    It needs no network and is the debugging lens for turn order.
    """

    name = "echo"
    provider = "echo"

    async def stream(self, request: ModelRequest, signal: CancelSignalLike) -> AsyncIterator[Chunk]:
        text = echo_text(request)
        for line in text.splitlines(keepends=True):
            if signal.cancelled:
                return
            yield TextDelta(line)
        # An offline model has no usage to report: the meter's estimate (≈ tokens sent) is the figure.
        yield Finish("stop")
