"""nbagent messages → Anthropic Messages API messages, and stream events → nbagent chunks.

The Messages API demands alternating roles, so consecutive user-role messages (tool results,
then contexts and prompts) are merged into ONE user message whose content blocks keep their order,
except that ``tool_result`` blocks go first, as the API requires after an assistant ``tool_use``.
Nothing else is merged; the order within each group is the history's order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from nbagent.log.messages import Message, TextBlock, ToolResultBlock
from nbagent.log.vocabulary import Failure
from nbagent.models._sdk_support import image_data
from nbagent.models.base import (
    Chunk,
    Finish,
    FinishKind,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
)

_STOP: dict[str, FinishKind] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "refusal": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}


def to_anthropic_messages(
    messages: Iterable[Message], signed_thinking: Mapping[str, list[dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` array of a Messages API request (roles alternate; see the module doc).

    ``signed_thinking`` maps an answer's first tool-call id to the thinking blocks (with their
    signatures) that preceded its calls; those are sent back as extended thinking with tools needs.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            blocks = _assistant_blocks(message)
            first_call = first_tool_call_id(message)
            if signed_thinking and first_call is not None and first_call in signed_thinking:
                blocks = [dict(b) for b in signed_thinking[first_call]] + blocks
        else:
            blocks = _user_blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == message.role:
            blocks = out[-1]["content"] + blocks
            out.pop()
        if message.role == "user":
            blocks = [b for b in blocks if b["type"] == "tool_result"] + [
                b for b in blocks if b["type"] != "tool_result"
            ]
        out.append({"role": message.role, "content": blocks})
    return out


def first_tool_call_id(message: Message) -> str | None:
    return next((str(b.get("id")) for b in message.content if b.get("type") == "tool-call"), None)


def anthropic_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]} for s in schemas
    ]


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    # nbagent's reasoning blocks stay home: the API takes thinking back only with its signature,
    # which the model keeps in memory (``signed_thinking``) for the answers it streamed itself.
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            blocks.append({"type": "text", "text": str(cast(TextBlock, block)["text"])})
        elif kind == "tool-call":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": str(block.get("id")),
                    "name": str(block.get("name")),
                    "input": _input(block.get("arguments")),
                }
            )
    return blocks


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if block.get("type") == "tool-result":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(block.get("tool_call_id"))}
            content = [
                c
                for c in (_content_block(b) for b in cast(ToolResultBlock, block).get("content") or ())
                if c is not None
            ]
            if content:
                result["content"] = content
            if block.get("is_error"):
                result["is_error"] = True
            blocks.append(result)
        else:
            converted = _content_block(block)
            if converted is not None:
                blocks.append(converted)
    return blocks


def _content_block(block: Any) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        return {"type": "text", "text": text} if text else None  # the API refuses empty text blocks
    if kind == "image":
        image = image_data(block)
        if image is None:
            return {"type": "text", "text": f"[image unavailable: {block.get('path', '?')}]"}
        return {"type": "image", "source": {"type": "base64", "media_type": image[0], "data": image[1]}}
    return None


def _input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {}
    else:
        value = arguments
    return dict(value) if isinstance(value, dict) else {}


@dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)
    thinking_parts: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""


@dataclass
class AnthropicStreamState:
    """Assembles raw Messages stream events into nbagent chunks."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    stop_reason: str | None = None
    stopped: bool = False
    thinking: list[dict[str, Any]] = field(default_factory=list)
    """Completed thinking blocks in wire form, signatures included, to send back with tool use."""
    tool_ids: list[str] = field(default_factory=list)

    def feed(self, event: Any) -> list[Chunk]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._usage(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            return self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._stop(self.blocks.get(event.index))
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, index: int, block: Any) -> list[Chunk]:
        """A content block opens: remembered by its index; text it opens with is a delta already."""
        self.blocks[index] = _Block(
            kind=block.type,
            id=getattr(block, "id", "") or "",
            name=getattr(block, "name", "") or "",
            signature=getattr(block, "signature", "") or "",
            data=getattr(block, "data", "") or "",
        )
        if block.type == "thinking" and getattr(block, "thinking", None):
            self.blocks[index].thinking_parts.append(block.thinking)
        text = getattr(block, "text", None) or getattr(block, "thinking", None)
        if text:
            return [TextDelta(text) if block.type == "text" else ReasoningDelta(text)]
        return []

    def _stop(self, block: _Block | None) -> list[Chunk]:
        """A content block closes: a tool call is whole; thinking is kept to send back with tool use."""
        if block is not None and block.kind == "tool_use":
            self.tool_ids.append(block.id)
            return [ToolCallChunk(block.id, block.name, "".join(block.json_parts) or "{}")]
        if block is not None and block.kind == "thinking" and block.signature:
            thinking = "".join(block.thinking_parts)
            self.thinking.append({"type": "thinking", "thinking": thinking, "signature": block.signature})
        elif block is not None and block.kind == "redacted_thinking":
            self.thinking.append({"type": "redacted_thinking", "data": block.data})
        return []

    def end(self) -> list[Chunk]:
        """Usage, then ``Finish``; a stream cut before ``message_stop`` is a ``TRANSPORT`` failure."""
        usage = Usage(self.input_tokens, self.output_tokens, cached_input_tokens=self.cached_input_tokens)
        if not self.stopped:
            failure = Failure("the stream ended before the model finished its answer", code="TRANSPORT")
            return [usage, Finish("error", failure)]
        return [usage, Finish(_STOP.get(self.stop_reason or "end_turn", "stop"))]

    def _delta(self, index: int, delta: Any) -> list[Chunk]:
        kind = getattr(delta, "type", None)
        if kind == "text_delta" and delta.text:
            return [TextDelta(delta.text)]
        if kind == "thinking_delta" and delta.thinking:
            self.blocks.setdefault(index, _Block(kind="thinking")).thinking_parts.append(delta.thinking)
            return [ReasoningDelta(delta.thinking)]
        if kind == "signature_delta":
            self.blocks.setdefault(index, _Block(kind="thinking")).signature += delta.signature or ""
        if kind == "input_json_delta":
            block = self.blocks.setdefault(index, _Block(kind="tool_use"))
            block.json_parts.append(delta.partial_json or "")
        return []

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        prompt = getattr(usage, "input_tokens", None)
        if prompt is not None:
            cached = (getattr(usage, "cache_creation_input_tokens", None) or 0) + (
                getattr(usage, "cache_read_input_tokens", None) or 0
            )
            self.input_tokens = int(prompt) + int(cached)
            self.cached_input_tokens = int(getattr(usage, "cache_read_input_tokens", None) or 0)
        if getattr(usage, "output_tokens", None) is not None:
            self.output_tokens = int(usage.output_tokens)
