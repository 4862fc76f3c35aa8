"""Text helpers shared by the context producers: token estimates, escaping inside frames, clipping."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import numbers
import re
from typing import Any

from nbagent.core.estimate import CHARS
from nbagent.units import format_size

ELLIPSIS = "…"

_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")
_CONTROL_NAMES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def estimate_tokens(text: str) -> int:
    """A conservative token estimate: four ASCII characters per token, one token per other character.

    Real tokenizers average about four characters per token for English and code; scripts outside
    ASCII (CJK, emoji) cost roughly a token per character or more, so they count one each.
    """
    return CHARS.count(text)  # the meter's characters rule (nbagent.core.estimate), to the token


def _escape_control(match: re.Match[str]) -> str:
    ch = match.group()
    return _CONTROL_NAMES.get(ch, f"\\u{ord(ch):04x}")


def one_line(text: str) -> str:
    """``text`` with line breaks, other control characters and lone surrogates written as visible escapes.

    Lone surrogates (how Python decodes non-UTF-8 file names) cannot be stored as UTF-8; ``\\udcff``
    shows them as written.
    """
    return _CONTROL.sub(_escape_control, text)


def printable(text: str) -> str:
    """``text`` that encodes as UTF-8: lone surrogates written as ``\\udcff``, everything else kept."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@functools.lru_cache(maxsize=32)
def _closing(tag: str) -> re.Pattern[str]:
    # Tolerant of case and spaces (``< / DataFrame``): a reader could take any of them for the close.
    return re.compile(r"<(\s*)/(?=\s*" + re.escape(tag) + ")", re.IGNORECASE)


def guard(text: str, tag: str) -> str:
    """``text`` with every ``</tag`` written ``<\\/tag``, so data cannot close the ``<tag>`` frame around it.

    Nothing else is escaped: markup, ``&`` and quotes reach the model as written.
    """
    if "<" not in text:
        return text
    return _closing(tag).sub(r"<\1\\/", text)


def escape(text: str, tag: str) -> str:
    """Data for one line of the body of a ``<tag>`` frame: control characters made visible, the close guarded."""
    return guard(one_line(text), tag)


def escape_attr(text: str, tag: str) -> str:
    """Data for a double-quoted attribute of a ``<tag …>`` opening, written as a JSON string's inside.

    ``\\`` and ``"`` are backslash-escaped and control characters made visible, so the value ends at
    the first unescaped quote; the close is guarded as in the body.
    """
    return guard(one_line(text.replace("\\", "\\\\")), tag).replace('"', '\\"')


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def is_null(value: Any) -> bool:
    """True for None, pandas' ``NA`` and ``NaT`` (checked without importing pandas); NaN is a number."""
    return value is None or type(value).__name__ in ("NAType", "NaTType")


def format_number(value: Any) -> str:
    """Integers in full, other reals to six significant digits; anything else through ``str``."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.6g}"
    return str(value)


def format_value(value: Any, *, quote_strings: bool = False, nan_is_null: bool = False) -> str:
    """A compact, deterministic, unescaped rendering of one cell value.

    ``nan_is_null`` renders a float NaN as ``null``: pandas uses NaN as its missing marker, polars not.
    """
    if is_null(value) or (nan_is_null and isinstance(value, float) and value != value):
        return "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if quote_strings else value
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
        return "true" if value else "false"
    if isinstance(value, numbers.Number):
        return format_number(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time | _dt.timedelta):
        return str(value)
    if isinstance(value, bytes):
        return repr(value)
    return str(value)


def format_bytes(size: float) -> str:
    """A byte count as every view spells it (``12.3 MB``)."""
    return format_size(size)
