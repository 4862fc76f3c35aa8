"""Short human labels for message sources, shared by the live turn display, the transcript and the
widgets: one place decides how a message is named wherever it is shown."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def source_label(source: Mapping[str, Any]) -> str:
    """A few words naming who produced a message: ``you``, ``dataframe df``, ``error KeyError``…

    Unknown kinds are shown by their kind, as SPEC §2.3 asks consumers to tolerate them.
    """
    kind = str(source.get("kind", "?"))
    if kind == "user":
        return "you"
    if kind == "dataframe":
        name = source.get("name")
        shape = source.get("shape")
        size = f" ({shape[0]}×{shape[1]})" if isinstance(shape, list | tuple) and len(shape) == 2 else ""
        return f"dataframe {name}{size}" if name else f"dataframe{size}"
    if kind == "variable":
        return f"variable {source.get('name')}"
    if kind == "error":
        return f"error {source.get('ename')}"
    if kind == "cell":
        label = source.get("label")
        return f"text · {label}" if label else "text"
    if kind == "tool":
        return "tool result"
    if kind == "session-reference":
        return "recalled session"
    if kind == "plugin":
        return f"plugin {source.get('plugin')}"
    if kind == "model":
        return str(source.get("model") or "assistant")
    return kind


def badge(source: Mapping[str, Any]) -> str:
    """The one-word badge of a message in the live display: ``you`` for a typed prompt, else its kind."""
    kind = str(source.get("kind") or "?")
    return "you" if kind == "user" else kind


def context_label(source: Mapping[str, Any], text: str, limit: int = 80) -> str:
    """A short line saying what a message holds, built from its source where that says more than the
    text's opening (a DataFrame summary starts with a long ``<dataframe …>`` tag):

    ``df · 50×3 · pandas`` (dataframe), ``config · dict`` (variable), ``KeyError: 'x'`` (error), the
    label or first line (cell), the referenced sessions' labels (session-reference), the plugin name
    (plugin); typed prompts, tool results and unknown kinds show their first line.
    """
    kind = source.get("kind")
    label = ""
    if kind == "dataframe":
        shape = source.get("shape")
        size = "×".join(str(n) for n in shape) if isinstance(shape, list | tuple) and len(shape) == 2 else ""
        parts = (source.get("name"), size, source.get("library"))
        label = " · ".join(str(p) for p in parts if p)
    elif kind == "variable":
        type_name = str(source.get("type") or "").removeprefix("builtins.")
        label = " · ".join(str(p) for p in (source.get("name"), type_name) if p)
    elif kind == "error":
        ename, evalue = source.get("ename"), source.get("evalue")
        label = f"{ename}: {evalue}" if ename and evalue else str(ename or evalue or "")
    elif kind == "cell":
        label = str(source.get("label") or "")
    elif kind == "session-reference":
        refs = source.get("references")
        names = [
            str(r.get("label") or str(r.get("session_id", ""))[:8])
            for r in (refs if isinstance(refs, list | tuple) else ())
            if isinstance(r, Mapping)
        ]
        label = ", ".join(n for n in names if n) or str(source.get("label") or "")
    elif kind == "plugin":
        label = str(source.get("plugin") or "")
    return first_line(label, limit) if label.strip() else first_line(text, limit)


def is_typed_prompt(source: Mapping[str, Any]) -> bool:
    """SPEC §2.3: a typed prompt is exactly a message whose source kind is ``user``."""
    return source.get("kind") == "user"


def first_line(text: str, limit: int = 120) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


_FRAME_OPEN = re.compile(r"^<[A-Za-z][\w.-]*(\s[^<>]*)?>$")


def content_line(text: str, limit: int = 120) -> str:
    """The first line that says something: a producer's opening frame tag (``<dataframe …>``) is
    skipped, since the label already names the producer. Falls back to the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and _FRAME_OPEN.match(lines[0]):
        return first_line(lines[1], limit)
    return first_line(text, limit)


def short_label(source: Mapping[str, Any]) -> str:
    """The compact label of a badge: an explicit ``label``, else what the source kind implies
    (``df 3×2``, ``cfg: dict``, ``KeyError``, the plugin name, ``recall``)."""
    if isinstance(source.get("label"), str):
        return source["label"]
    kind = source.get("kind")
    if kind == "dataframe":
        shape = source.get("shape")
        dims = "×".join(str(d) for d in shape) if isinstance(shape, list | tuple) else ""
        return " ".join(p for p in (str(source.get("name", "")), dims) if p)
    if kind == "variable":
        return f"{source.get('name', '?')}: {source.get('type', '?')}"
    if kind == "error":
        return str(source.get("ename", "error"))
    if kind == "plugin":
        return str(source.get("plugin", ""))
    if kind == "session-reference":
        return str(source.get("form", "recall"))
    return ""


def block_text(content: Any) -> str:
    """The concatenated text blocks of a stored message's content."""
    return "".join(
        b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"
    )


def outcome_text(reason: Mapping[str, Any]) -> str:
    """``turn/end.reason`` in words: ``completed``, ``aborted (user)``, ``error RATE_LIMIT: …``."""
    kind = str(reason.get("kind", "?"))
    if kind == "aborted":
        cause = (reason.get("reason") or {}).get("kind")
        return f"aborted ({cause})" if cause else "aborted"
    if kind == "error":
        err = reason.get("error") or {}
        code = err.get("code") or "UNKNOWN"
        return f"error {code}: {first_line(str(err.get('message', '')), 200)}"
    if kind == "interrupted":
        return "interrupted (the kernel stopped during this turn; repaired on resume)"
    return kind
