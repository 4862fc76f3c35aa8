"""List, tuple, dict and struct values in a frame's column: described as such, never hashed.

A column of lists (pandas ``object`` holding lists, polars ``List``/``Array``) or of dicts (polars
``Struct``) has no distinct count or top values worth showing; it gets its length range, its element
types and a few examples written as data (``["a", "b"]``, not numpy's ``[np.str_('b')]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nbagent.context._text import clip, format_value, is_null, printable

TYPES_SHOWN = 3
ITEMS_SHOWN = 8


def is_nested(value: Any) -> bool:
    """True for lists, tuples, sets, dicts and numpy arrays (what a frame cell holds when nested)."""
    return isinstance(value, list | tuple | set | frozenset | dict) or type(value).__name__ == "ndarray"


@dataclass(frozen=True)
class Nested:
    """What a column of nested values holds."""

    kind: str
    """``lists`` or ``structs`` (dicts)."""
    min_length: int
    max_length: int
    element_types: tuple[str, ...]
    """The Python types of the elements (of the values, for structs), most frequent first."""

    def describe(self) -> str:
        """``lists of str, length 1–3`` or ``structs of int, str, 2 fields``."""
        types = ", ".join(self.element_types) or "nothing"
        lengths = (
            f"{self.min_length}"
            if self.min_length == self.max_length
            else f"{self.min_length}–{self.max_length}"
        )
        if self.kind == "structs":
            return f"structs of {types}, {lengths} fields"
        return f"lists of {types}, length {lengths}"


def nested(values: Iterable[Any]) -> Nested | None:
    """The :class:`Nested` description of non-null ``values``, or None when any is not nested."""
    lengths: list[int] = []
    types: dict[str, int] = {}
    dicts = 0
    for value in values:
        if is_null(value):
            continue
        if not is_nested(value):
            return None
        items = list(value.values()) if isinstance(value, dict) else list(value)
        dicts += isinstance(value, dict)
        lengths.append(len(items))
        for item in items[: ITEMS_SHOWN * 4]:
            name = "null" if is_null(item) else type(_plain(item)).__name__
            types[name] = types.get(name, 0) + 1
    if not lengths:
        return None
    ranked = sorted(types, key=lambda t: (-types[t], t))
    return Nested(
        kind="structs" if dicts == len(lengths) else "lists",
        min_length=min(lengths),
        max_length=max(lengths),
        element_types=tuple(ranked[:TYPES_SHOWN]) + (("…",) if len(ranked) > TYPES_SHOWN else ()),
    )


def format_nested(value: Any, limit: int) -> str:
    """A nested value as data: ``["a", 1, null]``, ``{"k": 2}``; numpy scalars as plain values."""
    return clip(printable(_text(value)), limit)


def _text(value: Any) -> str:
    if isinstance(value, dict):
        shown = list(value.items())[:ITEMS_SHOWN]
        more = ", …" if len(value) > ITEMS_SHOWN else ""
        return "{" + ", ".join(f"{_key(k)}: {_text(v)}" for k, v in shown) + more + "}"
    if is_nested(value):
        items = list(value)
        more = ", …" if len(items) > ITEMS_SHOWN else ""
        return "[" + ", ".join(_text(v) for v in items[:ITEMS_SHOWN]) + more + "]"
    value = _plain(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return format_value(value)


def _key(key: Any) -> str:
    key = _plain(key)
    return json.dumps(key if isinstance(key, str) else format_value(key), ensure_ascii=False)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (``np.str_('b')`` as ``'b'``)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        try:
            return value.item()
        except (ValueError, TypeError):
            return value
    return value
