"""A bounded preview of any Python object: type, length or shape, and a repr cut to a token budget."""

from __future__ import annotations

import itertools
import reprlib
from collections.abc import Sized
from typing import Any, TypeVar

from nbagent.context._text import ELLIPSIS, clip, escape, escape_attr, estimate_tokens, printable
from nbagent.core.messages import UserMessage

MIN_BUDGET_TOKENS = 32
"""The smallest budget a preview is guaranteed to fit."""

_TAG = "variable"


class _Repr(reprlib.Repr):
    """``reprlib.Repr`` keeping a dict's insertion order (``reprlib`` sorts keys), as ``repr`` does."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [
            f"{self.repr1(key, level - 1)}: {self.repr1(value, level - 1)}"
            for key, value in itertools.islice(x.items(), self.maxdict)
        ]
        if len(x) > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"


ReprT = TypeVar("ReprT", bound=reprlib.Repr)


def bounded(r: ReprT, *, level: int, items: int, keys: int, string: int, long: int, other: int) -> ReprT:
    """``r`` limited: nesting ``level``, ``items`` per sequence or set, ``keys`` per mapping, and the
    characters of a string, an int and any other object's ``repr``."""
    r.maxlevel = level
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = items
    r.maxdict, r.maxstring, r.maxlong, r.maxother = keys, string, long, other
    return r


_repr = bounded(_Repr(), level=4, items=50, keys=30, string=400, long=200, other=2000)


def qualified_type(obj: Any) -> str:
    """``module.Class`` for the object's type (``builtins`` spelled out)."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def variable(obj: Any, name: str, *, budget_tokens: int = 500) -> UserMessage:
    """A ``variable`` message previewing ``obj``: its type, its length or shape, and a bounded repr.

    The repr is produced by a size-limited ``reprlib`` (so a huge list is never rendered in full),
    reaches the model as written (only a ``</variable`` inside is guarded) and is cut to fit
    ``budget_tokens``. Prefer ``dataframe()`` for pandas and polars frames
    (``is_dataframe`` tells them apart).
    """
    if budget_tokens < MIN_BUDGET_TOKENS:
        raise ValueError(f"budget_tokens={budget_tokens} is too small; pass at least {MIN_BUDGET_TOKENS}")
    type_text = qualified_type(obj)
    size = _size(obj)
    for chars in (120, 40, 8):
        attrs = [("name", clip(name, chars)), ("type", clip(type_text, chars))]
        if size is not None:
            attrs.append(size)
        opening = "<variable " + " ".join(f'{k}="{escape_attr(v, _TAG)}"' for k, v in attrs) + ">"
        if estimate_tokens(opening) <= budget_tokens // 2:
            break
    closing = f"</{_TAG}>"
    body = _bounded_repr(obj)
    room = budget_tokens - estimate_tokens(opening + "\n\n" + closing)
    text = f"{opening}\n{_fit(body, room)}\n{closing}"
    return UserMessage.text(
        text, source={"kind": "variable", "name": printable(name), "type": printable(type_text)}
    )


def _size(obj: Any) -> tuple[str, str] | None:
    """``("shape", "3 x 4")`` or ``("len", "12")`` when the object states it cheaply, else None."""
    try:
        shape = getattr(obj, "shape", None)
        if isinstance(shape, tuple) and all(isinstance(d, int) or hasattr(d, "__index__") for d in shape):
            return "shape", " x ".join(str(int(d)) for d in shape)
        if isinstance(obj, Sized):
            return "len", str(len(obj))
    except Exception:
        pass
    return None


def _bounded_repr(obj: Any) -> str:
    try:
        return _repr.repr(obj)
    except Exception as exc:
        return f"repr unavailable ({type(exc).__name__}: {exc})"


def _fit(body: str, room_tokens: int) -> str:
    """The guarded repr, its lines kept in order and the overflow cut with an ellipsis."""
    text = "\n".join(escape(line, _TAG) for line in body.splitlines() or [""])  # reprs may span lines
    if estimate_tokens(text) <= room_tokens:
        return text
    marker = f"{ELLIPSIS} (cut to fit the token budget)"
    keep = max(room_tokens - estimate_tokens(marker) - 1, 0)
    low, high = 0, len(text)
    while low < high:  # the longest prefix within the budget
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= keep:
            low = mid
        else:
            high = mid - 1
    return text[:low] + "\n" + marker
