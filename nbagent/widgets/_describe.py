"""How one message looks in a widget: its badge kind, label, first line, size and full text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nbagent._json import thaw
from nbagent.labels import content_line, short_label

FIRST_LINE_MAX = 160
KNOWN_KINDS = frozenset(
    {"user", "cell", "dataframe", "variable", "error", "session-reference", "plugin", "tool", "model"}
)
"""Source kinds with their own badge colour; any other kind gets the neutral badge."""


def full_text(content: Any) -> str:
    """The message content as the model received it: text blocks verbatim, other blocks as JSON."""
    parts: list[str] = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "image":
            size = len(str(block.get("data", ""))) if "data" in block else None
            where = f"{size} bytes of base64" if size is not None else block.get("path", "?")
            parts.append(f"[image {block.get('mime', '?')}: {where}]")
        elif kind == "tool-result":
            parts.append(full_text(block.get("content", ())))
        else:
            parts.append(json.dumps(thaw(block), ensure_ascii=False, indent=1))
    return "\n".join(parts) if any(b.get("type") != "text" for b in content or ()) else "".join(parts)


def describe(message: Mapping[str, Any]) -> dict[str, Any]:
    """The widget fields of a stored message (plain JSON)."""
    source = message.get("source") or {}
    text = full_text(message.get("content", ()))
    return {
        "message_id": message.get("id"),
        "kind": str(source.get("kind", "")),
        "label": short_label(source),
        "first_line": content_line(text, FIRST_LINE_MAX) or f"[{_first_block_type(message)}]",
        "size": len(text.encode("utf-8")),
        "text": text,
        "source": thaw(source),
    }


def _first_block_type(message: Mapping[str, Any]) -> str:
    content = message.get("content") or ()
    return str(content[0].get("type", "empty")) if content else "empty"


def human_size(n: int) -> str:
    """``812 B``, ``4.1 kB``, ``2.3 MB``."""
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"
