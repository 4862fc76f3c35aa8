"""Known secret values (a model's API key, a configured password) found in text in any form a server
or a library may echo them: whole, in part (an error body quoting a key's first 20 or 28
characters), written as ``\\uXXXX``/``\\xXX`` escapes (a JSON body), or inside base64
(``Authorization: Basic base64(user:key)``). :func:`known_removed` replaces each such run.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

FRAGMENT = 12
"""Characters of a known value that, in a row, count as a leak of it (fewer is left alone: a key's
public prefix such as ``sk-proj-`` is shorter)."""

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")


def known_removed(text: str, values: Sequence[str], marker: str) -> str:
    """``text`` with every run of a known value (whole, part, escaped or in base64) replaced by ``marker``."""
    spans = _spans(text, values)
    if "\\u" in text or "\\x" in text:
        spans += _escaped_spans(text, values)
    for match in _BASE64.finditer(text):
        decoded = from_base64(match[0])
        if decoded is not None and _spans(decoded, values):
            spans.append((match.start(), match.end()))
    if not spans:
        return text
    pieces: list[str] = []
    at = 0
    for start, end in _merged(spans):
        pieces += [text[at:start], marker]
        at = end
    return "".join(pieces) + text[at:]


def from_base64(text: str) -> str | None:
    """``text`` decoded as base64 (standard or URL-safe, padding optional), None when it is not."""
    padded = text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.decode("utf-8", "replace")


def _spans(text: str, values: Sequence[str]) -> list[tuple[int, int]]:
    """Where runs of at least ``FRAGMENT`` characters (or the whole value, if shorter) of each value
    stand in ``text``. Any such run holds one of the value's aligned chunks of half that length, so
    only the chunks are searched for, each hit grown to the run around it."""
    spans: list[tuple[int, int]] = []
    for value in values:
        least = min(len(value), FRAGMENT)
        half = max(least // 2, 1)
        offsets: dict[str, list[int]] = {}
        for at in range(0, len(value) - half + 1, half):
            offsets.setdefault(value[at : at + half], []).append(at)
        for chunk, where in offsets.items():
            found = text.find(chunk)
            while found != -1:
                end = found + half
                for at in where:
                    start, stop = _grown(text, value, found, at, half)
                    if stop - start >= least:
                        spans.append((start, stop))
                        end = max(end, stop)
                found = text.find(chunk, end)
    return spans


def _grown(text: str, value: str, found: int, at: int, half: int) -> tuple[int, int]:
    """The run of ``text`` around ``text[found:found+half] == value[at:at+half]`` that matches ``value``."""
    start, back = found, at
    while start > 0 and back > 0 and text[start - 1] == value[back - 1]:
        start, back = start - 1, back - 1
    stop, ahead = found + half, at + half
    while stop < len(text) and ahead < len(value) and text[stop] == value[ahead]:
        stop, ahead = stop + 1, ahead + 1
    return start, stop


def _escaped_spans(text: str, values: Sequence[str]) -> list[tuple[int, int]]:
    """The runs of known values in ``text`` once its ``\\uXXXX``/``\\xXX`` escapes are read, as spans
    of the escaped text."""
    decoded: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for match in _ESCAPE.finditer(text):
        for i in range(at, match.start()):
            decoded.append(text[i])
            starts.append(i)
            ends.append(i + 1)
        decoded.append(chr(int(match[1] or match[2], 16)))
        starts.append(match.start())
        ends.append(match.end())
        at = match.end()
    for i in range(at, len(text)):
        decoded.append(text[i])
        starts.append(i)
        ends.append(i + 1)
    return [(starts[a], ends[b - 1]) for a, b in _spans("".join(decoded), values)]


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
