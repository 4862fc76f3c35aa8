"""A notebook error as context: the exception named in the source, the traceback framed and bounded."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nbagent.context._text import ELLIPSIS, clip, escape, escape_attr, estimate_tokens, printable
from nbagent.log.messages import ErrorSource, UserMessage

_TAG = "error"
MIN_BUDGET_TOKENS = 64
"""The smallest budget an error message is guaranteed to fit."""
EVALUE_CHARS = 500
"""``evalue`` is cut to this many characters in the source (and to 200 in the opening tag)."""
LINE_CHARS = 400

_ANSI = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI colour and cursor sequences (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def error(
    ename: str, evalue: str, traceback_text: str | Sequence[str], *, budget_tokens: int = 1000
) -> UserMessage:
    """An ``error`` message: ``<error ename=… evalue=…>`` around the ANSI-stripped traceback, as written.

    ``traceback_text`` may be one string or Jupyter's list of traceback lines. A traceback over
    ``budget_tokens`` keeps its tail (the frames nearest the failure and the exception line) and says
    how many earlier lines were left out.
    """
    if budget_tokens < MIN_BUDGET_TOKENS:
        raise ValueError(f"budget_tokens={budget_tokens} is too small; pass at least {MIN_BUDGET_TOKENS}")
    if not isinstance(traceback_text, str):
        traceback_text = "\n".join(traceback_text)
    ename, evalue = strip_ansi(ename), strip_ansi(evalue)
    opening = _opening(ename, evalue, budget_tokens // 2)
    closing = f"</{_TAG}>"
    raw = [clip(line.rstrip(), LINE_CHARS) for line in strip_ansi(traceback_text).strip("\n").splitlines()]
    lines = [escape(line, _TAG) for line in raw or [f"{ename}: {evalue}"]]
    room = budget_tokens - estimate_tokens(f"{opening}\n\n{closing}")
    kept = _tail(lines, room)
    text = "\n".join([opening, *kept, closing])
    source: ErrorSource = {
        "kind": "error",
        "ename": printable(ename),
        "evalue": clip(printable(evalue), EVALUE_CHARS),
    }
    return UserMessage.text(text, source=source)


def _opening(ename: str, evalue: str, limit_tokens: int) -> str:
    """The opening tag, its attributes clipped shorter until it costs at most ``limit_tokens``."""
    for chars in (200, 80, 20, 1):
        ename_attr = escape_attr(clip(ename, min(chars, 80)), _TAG)
        tag = f'<error ename="{ename_attr}" evalue="{escape_attr(clip(evalue, chars), _TAG)}">'
        if estimate_tokens(tag) <= limit_tokens:
            break
    return tag


def _tail(lines: list[str], room_tokens: int) -> list[str]:
    """The last lines that fit ``room_tokens``, after a note counting the lines left out."""
    if estimate_tokens("\n".join(lines)) <= room_tokens:
        return lines
    kept: list[str] = []
    used = estimate_tokens(f"{ELLIPSIS} {len(lines):,} earlier lines omitted") + 1
    for line in reversed(lines):
        cost = estimate_tokens(line) + 1
        if used + cost > room_tokens:
            break
        kept.append(line)
        used += cost
    if kept:
        kept.reverse()
    else:  # even the last line is too long: keep its end
        kept = [_suffix_within(lines[-1], room_tokens - used)]
    omitted = len(lines) - len(kept)
    return [f"{ELLIPSIS} {omitted:,} earlier lines omitted", *kept] if omitted else kept


def _suffix_within(line: str, room_tokens: int) -> str:
    """The longest end of a guarded ``line`` within ``room_tokens``."""
    low, high = 0, len(line)
    while low < high:  # the smallest start index that fits
        mid = (low + high) // 2
        if estimate_tokens(ELLIPSIS + line[mid:]) <= room_tokens:
            high = mid
        else:
            low = mid + 1
    return ELLIPSIS + line[low:]
