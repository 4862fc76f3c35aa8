"""An MCP tool result as an nbagent tool result: text, images as image blocks, errors; bounded like the
notebook's built-in tools (SPEC §9.4) so one answer cannot flood the model's context or the log."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from nbagent.core.tools import ToolResult
from nbagent.redaction import REDACTED

TEXT_CHARS = 12_000
"""Characters of text at most in one result (the built-in tools' bound)."""

MAX_IMAGES = 4
IMAGE_CHARS = 2_000_000
"""Base64 characters at most of one image (about 1.5 MB of image data)."""


def tool_result(server: str, tool: str, result: dict[str, Any]) -> ToolResult:
    """``result`` (an MCP ``CallToolResult`` as its wire JSON) for the model; an ``isError`` result
    stays an error."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in result.get("content") or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "image":
            data, mime = str(block.get("data") or ""), str(block.get("mimeType") or "image/png")
            if len(images) < MAX_IMAGES and len(data) <= IMAGE_CHARS:
                images.append({"type": "image", "mime": mime, "data": data})
            else:
                why = "too large" if len(data) > IMAGE_CHARS else f"more than {MAX_IMAGES} images"
                texts.append(f"[image {mime} left out: {why}]")
        else:
            texts.append(_block_text(block))
    structured = result.get("structuredContent")
    if not texts and not images and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False, indent=2, default=str))
    text = clip("\n".join(texts), TEXT_CHARS)
    failed = bool(result.get("isError"))
    if failed:
        text = f"Error from MCP server {server!r} ({tool}): {text or 'no details given'}"
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text or not images else []
    return ToolResult(blocks + images, is_error=failed, code="MCP_TOOL_ERROR" if failed else None)


def hide_secrets(result: ToolResult, secrets: Iterable[str]) -> ToolResult:
    """``result`` with every value of ``secrets`` in its text replaced by ``[redacted]`` (SPEC §9.7:
    the kernel's secret-looking variables never reach the log or a model through a server's answer)."""
    values = sorted({v for v in secrets if v}, key=len, reverse=True)
    if not values:
        return result

    def hide(text: str) -> str:
        return hide_values(text, values)

    if isinstance(result.content, str):
        return dataclasses.replace(result, content=hide(result.content))
    blocks = [
        {**b, "text": hide(b["text"])} if isinstance(b, dict) and isinstance(b.get("text"), str) else b
        for b in result.content
    ]
    return dataclasses.replace(result, content=blocks)


def with_notes(result: ToolResult, notes: list[str]) -> ToolResult:
    """``result`` with ``notes`` (nbagent's own lines about the call) added as a text block."""
    text = "\n".join(notes)
    if isinstance(result.content, str):
        return dataclasses.replace(result, content=f"{result.content}\n{text}" if result.content else text)
    return dataclasses.replace(result, content=[*result.content, {"type": "text", "text": text}])


def hide_values(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` (longest first) replaced by ``[redacted]``."""
    for value in sorted({v for v in values if v}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "audio":
        return f"[audio {block.get('mimeType')} not shown]"
    if kind == "resource_link":
        return f"[resource {block.get('name', '')}: {block.get('uri')}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return f"[resource {resource.get('uri')}]\n{resource['text']}"
        return f"[resource {resource.get('uri')}: {resource.get('mimeType') or 'binary'} data not shown]"
    return f"[{kind or 'unknown'} content not shown]"


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters cut)"
