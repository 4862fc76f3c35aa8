"""A bounded preview of any Python object: type, length or shape, and its most telling text (``_shown``)
cut to a token budget."""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sized
from dataclasses import replace
from typing import Any, TypeVar

from nbagent.context._shown import shown
from nbagent.context._text import ELLIPSIS, clip, escape, escape_attr, estimate_tokens, printable
from nbagent.log.messages import UserMessage, VariableSource

MIN_BUDGET_TOKENS = 32
"""The smallest budget a preview is guaranteed to fit."""

_TAG = "variable"


ReprT = TypeVar("ReprT", bound=reprlib.Repr)


def bounded(r: ReprT, *, level: int, items: int, keys: int, string: int, long: int, other: int) -> ReprT:
    """``r`` limited: nesting ``level``, ``items`` per sequence or set, ``keys`` per mapping, and the
    characters of a string, an int and any other object's ``repr``."""
    r.maxlevel = level
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = items
    r.maxdict, r.maxstring, r.maxlong, r.maxother = keys, string, long, other
    return r


def qualified_type(obj: Any) -> str:
    """``module.Class`` for the object's type (``builtins`` spelled out)."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def variable(
    obj: Any, name: str, *, budget_tokens: int = 1500, scrub: Callable[[str], str] | None = None
) -> UserMessage:
    """A ``variable`` message previewing ``obj``: its type, its length or shape, and its text.

    The text is the one that says most (``_shown``): a string as written, the ``repr``, or its
    ``str`` or ``_repr_markdown_`` where the ``repr`` says nothing (statsmodels summaries), a
    container of frames one line per frame; containers through a size-limited ``reprlib``. It reaches
    the model as written (only a ``</variable`` inside is guarded) and is cut to fit
    ``budget_tokens``. ``source["form"]`` says which text was used; ``source["cut"]`` says what was
    left out, ``{"shown_chars", "total_chars", "whole_tokens"}`` for a budget cut and ``"elided"``
    for what the text itself shortened. ``scrub`` rewrites the chosen text before it is cut (the
    tools hide secrets with it). Prefer ``dataframe()`` for frames (``is_dataframe``).
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
    chosen = shown(obj, name)
    if scrub is not None:
        chosen = replace(chosen, text=scrub(chosen.text))
    room = budget_tokens - estimate_tokens(opening + "\n\n" + closing)
    body, kept = _fit(chosen.text, room)
    text = f"{opening}\n{body}\n{closing}"
    source: VariableSource = {
        "kind": "variable",
        "name": printable(name),
        "type": printable(type_text),
        "form": chosen.form,
    }
    cut: dict[str, Any] = {}
    if kept < len(chosen.text):
        whole = estimate_tokens(f"{opening}\n{_fit(chosen.text, 10**12)[0]}\n{closing}")
        cut |= {"shown_chars": kept, "total_chars": len(chosen.text), "whole_tokens": whole}
    if chosen.elided:
        cut["elided"] = chosen.elided
    if cut:
        source["cut"] = cut
    return UserMessage.text(text, source=source)


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


def _fit(body: str, room_tokens: int) -> tuple[str, int]:
    """The guarded text, its lines kept in order and the overflow cut with an ellipsis, and how many
    characters of ``body`` it keeps."""
    text = "\n".join(escape(line, _TAG) for line in body.splitlines() or [""])  # texts span lines
    if estimate_tokens(text) <= room_tokens:
        return text, len(body)
    marker = f"{ELLIPSIS} (cut to fit the token budget)"
    keep = max(room_tokens - estimate_tokens(marker) - 1, 0)
    low, high = 0, len(text)
    while low < high:  # the longest prefix within the budget
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= keep:
            low = mid
        else:
            high = mid - 1
    shown_chars = min(low, len(body))  # guarding adds a character per close: a close estimate
    return text[:low] + "\n" + marker, shown_chars
