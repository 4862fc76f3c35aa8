"""Small text helpers every rendering shares: cutting at a word, sizes, counts, first lines."""

from __future__ import annotations

import re

ELLIPSIS = "…"
_FRAME_OPEN = re.compile(r"^<[A-Za-z][\w.-]*(\s[^<>]*)?>$")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary, ending with ``…``.

    A word longer than a fifth of the limit is cut inside (a URL or a hash would otherwise leave
    almost nothing); everything else is cut between words, never mid-word or mid-number.
    """
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = text[: limit - 1]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if space >= limit - 1 - max(limit // 5, 1) and space > 0:
        head = head[:space]
    return head.rstrip(" \t\n,;:.-–—") + ELLIPSIS


def first_line(text: str, limit: int = 120) -> str:
    """The first non-empty line of ``text``, stripped and clipped to ``limit``."""
    for line in text.splitlines():
        if line.strip():
            return clip(line.strip(), limit)
    return ""


def summary_line(text: str, limit: int = 120) -> str:
    """The first line of ``text`` that says something: a label line (``result:``) takes the line after
    it, so a labelled report reads ``result: 2`` instead of ``result:``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":") and " " not in lines[0]:
        return clip(f"{lines[0]} {lines[1]}", limit)
    return clip(lines[0], limit) if lines else ""


def content_line(text: str, limit: int = 120) -> tuple[str, int]:
    """The first line that says something, and how many lines come after it.

    A producer's opening frame tag (``<dataframe …>``) is skipped, and so is its closing tag at the
    end, since the label already names the producer.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and _FRAME_OPEN.match(lines[0]):
        lines = lines[1:]
        if lines and lines[-1].startswith("</") and lines[-1].endswith(">"):
            lines = lines[:-1]
    if not lines:
        return "", 0
    return clip(lines[0], limit), len(lines) - 1


def human_size(n: int) -> str:
    """``812 B``, ``4.1 kB``, ``2.3 MB`` (SI units, the one spelling of sizes in every view)."""
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 step``, ``3 steps``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def more_lines_text(n: int) -> str:
    """``+12 lines`` for the lines an item hides, or ``""``."""
    return f"+{plural(n, 'line')}" if n > 0 else ""
