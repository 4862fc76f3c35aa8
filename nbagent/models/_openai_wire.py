"""nbagent messages → OpenAI chat-completions messages, and streamed chunks → nbagent chunks.

One wire message per nbagent message, in order (SPEC §7): a user message becomes one ``user``
message, each ``tool-result`` block one ``tool`` message paired by ``tool_call_id``; nothing is merged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from nbagent._json import thaw
from nbagent.log.messages import Message
from nbagent.log.vocabulary import Failure
from nbagent.models._sdk_support import image_data, text_of
from nbagent.models.base import (
    Chunk,
    Finish,
    FinishKind,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
)

NO_OUTPUT = "(no output)"

_FINISH: dict[str, FinishKind] = {
    "stop": "stop",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "length": "max-tokens",
}


def to_openai_messages(
    messages: Iterable[Message],
    system: str | None,
    *,
    reasoning_field: str | None = None,
    flatten_text: bool = False,
) -> list[dict[str, Any]]:
    """The ``messages`` array of a chat-completions request.

    ``reasoning_field`` (DeepSeek: ``"reasoning_content"``) sends an assistant tool-calling
    message's reasoning back, which thinking-mode tool use requires; otherwise reasoning stays home.
    ``flatten_text`` sends multi-block text as one string for servers that accept no content parts.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    images: list[dict[str, Any]] = []
    """Image parts of tool results, sent in a user message after the run of tool messages (a tool
    message takes only text)."""
    for message in messages:
        if message.role == "assistant":
            out.extend(_images_message(images))
            wire = _assistant(message, reasoning_field)
            if wire is not None:
                out.append(wire)
        else:
            for wire in _user(message, flatten_text, images):
                if wire["role"] != "tool":
                    out.extend(_images_message(images))
                out.append(wire)
    out.extend(_images_message(images))
    return out


def _images_message(images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user message carrying ``images`` (then emptied), or nothing."""
    if not images:
        return []
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "Images returned by the tool calls above:"}, *images],
    }
    images.clear()
    return [message]


def openai_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": schema} for schema in schemas]


def _assistant(message: Message, reasoning_field: str | None) -> dict[str, Any] | None:
    text = "".join(str(b.get("text", "")) for b in message.content if b.get("type") == "text")
    calls = [
        {
            "id": str(b.get("id")),
            "type": "function",
            "function": {"name": str(b.get("name")), "arguments": _arguments_text(b.get("arguments"))},
        }
        for b in message.content
        if b.get("type") == "tool-call"
    ]
    if not text and not calls:
        return None  # e.g. an interrupted answer that had only reasoning: nothing the API can take
    wire: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        wire["tool_calls"] = calls
        reasoning = "".join(str(b.get("text", "")) for b in message.content if b.get("type") == "reasoning")
        if reasoning_field and reasoning:
            wire[reasoning_field] = reasoning
    return wire


def _user(message: Message, flatten_text: bool, images: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    # Tool messages must directly follow the assistant message that called them, so a (rare)
    # message mixing results and other blocks sends its results first. A result's images go to
    # ``images`` (sent after the tool messages) unless the server takes no content parts.
    others = []
    for block in message.content:
        if block.get("type") == "tool-result":
            content = _tool_text(block, None if flatten_text else images)
            yield {
                "role": "tool",
                "tool_call_id": str(block.get("tool_call_id")),
                "content": content or NO_OUTPUT,
            }
        else:
            others.append(block)
    parts = [p for p in (_part(b) for b in others) if p is not None]
    if not parts:
        return
    if all(p["type"] == "text" for p in parts) and (len(parts) == 1 or flatten_text):
        yield {"role": "user", "content": "\n".join(p["text"] for p in parts)}
    else:
        yield {"role": "user", "content": parts}


def _tool_text(block: Any, images: list[dict[str, Any]] | None) -> str:
    """A tool result's text; each image is named in it and, when ``images`` is given, added there."""
    parts = block.get("content") or ()
    if isinstance(parts, str) or images is None:
        return text_of(parts)
    texts = []
    for part in parts:
        wire = _part(part) if part.get("type") == "image" else None
        if wire is not None and wire["type"] == "image_url":
            images.append(wire)
            texts.append(f"[image {len(images)}: {part.get('mime') or 'image'}, in the next user message]")
        else:
            texts.append(text_of([part]))
    return "".join(texts)


def _part(block: Any) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image":
        image = image_data(block)
        if image is None:
            return {"type": "text", "text": f"[image unavailable: {block.get('path', '?')}]"}
        return {"type": "image_url", "image_url": {"url": f"data:{image[0]};base64,{image[1]}"}}
    return None  # reasoning or unknown blocks are not sent


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(thaw(arguments))


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class OpenAIStreamState:
    """Assembles streamed ``chat.completion.chunk`` objects into nbagent chunks."""

    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish: FinishKind | None = None
    failure: Failure | None = None
    usage: Usage | None = None

    def feed(self, chunk: Any) -> list[Chunk]:
        out: list[Chunk] = []
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            details = getattr(usage, "prompt_tokens_details", None)
            self.usage = Usage(
                input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                cached_input_tokens=int(_field(details, "cached_tokens") or 0),
            )
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) != 0:
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                reasoning = _extra(delta, "reasoning_content") or _extra(delta, "reasoning")
                if reasoning:
                    out.append(ReasoningDelta(reasoning))
                if getattr(delta, "content", None):
                    out.append(TextDelta(delta.content))
                for call in getattr(delta, "tool_calls", None) or ():
                    self._add_call(call)
            reason = getattr(choice, "finish_reason", None)
            if reason and self.finish is None:
                out.extend(self._finish(reason))
        return out

    def end(self) -> list[Chunk]:
        """The closing chunks once the stream is over: usage, then ``Finish``."""
        out: list[Chunk] = [self.usage] if self.usage is not None else []
        if self.finish is None:
            failure = Failure("the stream ended before the model finished its answer", code="TRANSPORT")
            return [*out, Finish("error", failure)]
        return [*out, Finish(self.finish, self.failure)]

    def _add_call(self, call: Any) -> None:
        index = getattr(call, "index", None)
        index = len(self.calls) if index is None else int(index)
        pending = self.calls.setdefault(index, _PendingCall())
        if getattr(call, "id", None):
            pending.id = call.id
        function = getattr(call, "function", None)
        if function is not None:
            if getattr(function, "name", None):
                pending.name = function.name
            if getattr(function, "arguments", None):
                pending.arguments.append(function.arguments)

    def _finish(self, reason: str) -> list[Chunk]:
        if reason == "content_filter":
            self.finish = "error"
            self.failure = Failure("the provider's content filter stopped the answer", code="BAD_REQUEST")
            return []
        self.finish = _FINISH.get(reason, "stop")
        if self.finish == "stop" and self.calls:
            self.finish = "tool-calls"  # some compatible servers say "stop" after tool calls
        return [
            ToolCallChunk(p.id or f"call_{i}", p.name, "".join(p.arguments) or "{}")
            for i, p in sorted(self.calls.items())
        ]


def _extra(delta: Any, name: str) -> str | None:
    value = getattr(delta, name, None)
    if value is None:
        extra = getattr(delta, "model_extra", None) or {}
        value = extra.get(name)
    return value if isinstance(value, str) else None


def _field(value: Any, name: str) -> Any:
    """``value.name`` or ``value[name]`` (the SDK gives objects, or dicts for extra fields)."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)
