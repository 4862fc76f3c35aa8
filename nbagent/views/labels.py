"""How a message is named wherever it is shown: the one label function of every view.

``describe_message(message)`` gives its badge (a user-facing word), a short label, the first line
that says something, its size, and its full text. The live cell, the widgets, the static HTML,
the Markdown transcript and the JSON bundle all use it, so one dataframe has one name everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from nbagent._json import thaw
from nbagent.log.events import NEXT_STEP, NEXT_TURN
from nbagent.views.schema import MessageFields
from nbagent.views.text import clip, content_line, human_size, more_lines_text

FIRST_LINE_MAX = 160
LABEL_MAX = 80

BADGES: dict[str, str] = {"session-reference": "recall", "tool": "tool result", "model": "assistant"}
"""The badge word of a source kind where it is not the kind itself (``cell``, ``dataframe``,
``variable``, ``error``, ``plugin`` and unknown kinds are their own word; typed prompts are named by
their role instead)."""

ROLE_BADGES: dict[str, str] = {"followup": "followup", "steer": "steer", "prompt": "you"}

_MESSAGE_KEYS = tuple(MessageFields.__annotations__)
"""The keys of a message's JSON fields, in the schema's order."""


@dataclass(frozen=True, slots=True)
class Label:
    """A message as every view names it."""

    kind: str
    """The source kind (the colour key; unknown kinds are kept as they are)."""
    role: str
    """``followup``, ``steer``, ``prompt`` (typed, queue unknown), ``context`` or ``tool-context``."""
    badge: str
    """The badge's word: ``followup``, ``steer``, ``dataframe``, ``cell``, ``recall``…"""
    label: str
    """A short name: ``df · 50×3 · pandas``, ``config · dict``, ``KeyError: 'missing_0'``; may be empty."""
    first_line: str
    """The first line that says something, cut at a word."""
    more_lines: int
    """Lines of the text after ``first_line``."""
    size: int
    """Bytes of the text (UTF-8)."""
    text: str
    """The content as the model received it."""

    @property
    def size_text(self) -> str:
        return human_size(self.size)

    @property
    def more_text(self) -> str:
        return more_lines_text(self.more_lines)

    @property
    def title(self) -> str:
        """Badge and label in a few words, e.g. ``dataframe df · 50×3 · pandas`` (one-line receipts)."""
        return f"{self.badge} {self.label}".strip() if self.label else self.badge

    @property
    def summary(self) -> str:
        """Badge and what the message says: ``followup «Which city…»``, ``dataframe df · 3×2 · pandas``."""
        if self.label:
            return self.title
        return f"{self.badge} «{clip(self.first_line, LABEL_MAX)}»" if self.first_line else self.badge

    def fields(self) -> MessageFields:
        """The JSON fields of a message node or an inbox item (see docs/timeline-json.md): each key
        of :class:`MessageFields` is a field or a property of the label."""
        return cast(MessageFields, {key: getattr(self, key) for key in _MESSAGE_KEYS})


def role_of(kind: str, queue: str | None = None, via: str | None = None) -> str:
    """A typed prompt is a ``steer`` through next-step and a ``followup`` through next-turn."""
    if kind == "user":
        return {NEXT_STEP: "steer", NEXT_TURN: "followup"}.get(queue or "", "prompt")
    return "tool-context" if via else "context"


def describe_message(message: Any, *, queue: str | None = None, via: str | None = None) -> Label:
    """The :class:`Label` of a message (a ``Message`` or its stored JSON).

    ``queue`` is the inbox queue it came through (it tells a steer from a followup); ``via`` the
    tool whose result added it.
    """
    data: Mapping[str, Any] = message.to_json() if hasattr(message, "to_json") else message
    source = data.get("source")
    source = source if isinstance(source, Mapping) else {}
    kind = str(source.get("kind") or "?")
    role = role_of(kind, queue, via)
    text = full_text(data.get("content") or ())
    line, more = content_line(text, FIRST_LINE_MAX)
    if not line and data.get("content"):
        line = f"[{_first_block_type(data)}]"
    label = _source_label(kind, source)
    if kind == "error" and label:
        line, more = "", 0  # the label already says ``KeyError: 'x'``; the traceback is in the text
    elif kind == "dataframe":
        line = _frame_line(source) or line
    return Label(
        kind=kind,
        role=role,
        badge=ROLE_BADGES[role] if kind == "user" else BADGES.get(kind, kind),
        label=label,
        first_line=line,
        more_lines=more,
        size=len(text.encode("utf-8", "replace")),
        text=text,
    )


def _source_label(kind: str, source: Mapping[str, Any]) -> str:
    label = ""
    if kind == "session-reference":
        refs = source.get("references")
        names = [
            str(r.get("label") or str(r.get("session_id", ""))[:8])
            for r in (refs if isinstance(refs, list | tuple) else ())
            if isinstance(r, Mapping)
        ]
        label = ", ".join(n for n in names if n)
    if not label and isinstance(source.get("label"), str):
        label = source["label"]
    elif kind == "dataframe":
        shape = source.get("shape")
        size = (
            "×".join("?" if n is None else str(n) for n in shape)
            if isinstance(shape, list | tuple) and len(shape) == 2
            else ""
        )
        label = " · ".join(str(p) for p in (source.get("name"), size, source.get("library")) if p)
    elif kind == "variable":
        type_name = str(source.get("type") or "").removeprefix("builtins.")
        label = " · ".join(str(p) for p in (source.get("name"), type_name) if p)
    elif kind == "error":
        ename, evalue = source.get("ename"), source.get("evalue")
        label = f"{ename}: {evalue}" if ename and evalue else str(ename or evalue or "")
    elif kind == "plugin":
        label = str(source.get("plugin") or "")
    return clip(" ".join(label.split()), LABEL_MAX)


def captured_in(message: Any) -> str:
    """Where a captured value came from, as a person reads it: ``In [3]`` (the capture cell's
    execution count), or ``""`` when the source names no cell."""
    data: Mapping[str, Any] = message.to_json() if hasattr(message, "to_json") else message
    source = data.get("source")
    cell = source.get("cell") if isinstance(source, Mapping) else None
    count = cell.get("execution_count") if isinstance(cell, Mapping) else None
    return f"In [{count}]" if isinstance(count, int) and not isinstance(count, bool) else ""


def _frame_line(source: Mapping[str, Any]) -> str:
    """``50 rows × 3 columns: a, b, c`` from a dataframe source (its shape and column names)."""
    shape = source.get("shape")
    if not (isinstance(shape, list | tuple) and len(shape) == 2):
        return ""
    rows, cols = shape
    parts = [
        f"{n:,} {word}{'' if n == 1 else 's'}"
        for n, word in ((rows, "row"), (cols, "column"))
        if isinstance(n, int)
    ]
    if not parts:
        return ""
    line = " × ".join(parts)
    columns = source.get("columns")
    if isinstance(columns, list | tuple) and columns:
        line += ": " + ", ".join(str(c) for c in columns)
    return clip(line, FIRST_LINE_MAX)


def full_text(content: Any) -> str:
    """The message content as the model received it: text blocks verbatim, other blocks as JSON."""
    parts: list[str] = []
    plain = True
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
            continue
        plain = False
        if kind == "image":
            where = (
                f"{len(str(block['data']))} bytes of base64" if "data" in block else block.get("path", "?")
            )
            parts.append(f"[image {block.get('mime', '?')}: {where}]")
        elif kind == "tool-result":
            parts.append(full_text(block.get("content", ())))
        else:
            parts.append(json.dumps(thaw(block), ensure_ascii=False, indent=1))
    return "".join(parts) if plain else "\n".join(parts)


def _first_block_type(message: Mapping[str, Any]) -> str:
    content = message.get("content") or ()
    return str(content[0].get("type", "empty")) if content else "empty"
