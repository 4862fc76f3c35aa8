"""What the built-in tools may see of the user's namespace, and how they show it (SPEC §9.4).

Read-only by construction: names are listed from a copy of the namespace's items, values are looked
at through ``repr`` (bounded by ``reprlib``), ``len`` and a ``shape`` attribute, and a DataFrame
through the same summary ``%inject`` queues (``nbagent.context.dataframe``). Nothing is assigned,
imported into or deleted from the namespace.
"""

from __future__ import annotations

import difflib
import reprlib
import types
from collections.abc import Mapping, Sized
from typing import Any

MAX_VARIABLES = 100
"""Rows ``list_variables`` shows; the rest are counted."""

PREVIEW_CHARS = 100
"""Characters of the one-line preview per variable."""

LIST_CHARS = 12_000
"""The whole ``list_variables`` answer stays under this many characters."""

_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxfrozenset = _repr.maxdeque = 12
_repr.maxdict = 8
_repr.maxstring = 120
_repr.maxlong = 60
_repr.maxother = 300


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def type_name(obj: Any) -> str:
    """``DataFrame (pandas)``-style short type names: the class, and its top package unless it is a
    builtin or the user's own (``__main__``)."""
    cls = type(obj)
    package = cls.__module__.split(".")[0]
    return cls.__qualname__ if package in ("builtins", "__main__") else f"{cls.__qualname__} ({package})"


def size_of(obj: Any) -> str:
    """``shape 100×3``, ``len 12`` or ``""``, from what the object states cheaply."""
    try:
        shape = getattr(obj, "shape", None)
        if isinstance(shape, tuple) and all(hasattr(d, "__index__") for d in shape):
            return "shape " + "×".join(str(int(d)) for d in shape)
        if isinstance(obj, Sized) and not isinstance(obj, type):
            return f"len {len(obj)}"
    except Exception:
        pass
    return ""


def one_line_preview(obj: Any, limit: int = PREVIEW_CHARS) -> str:
    """A single line saying what ``obj`` holds: a frame's columns, otherwise a bounded ``repr``."""
    from nbagent.context import is_dataframe

    try:
        if is_dataframe(obj):
            columns = getattr(obj, "columns", None)
            if columns is not None:
                return clip("columns: " + ", ".join(str(c) for c in list(columns)[:50]), limit)
            return clip(f"series {getattr(obj, 'name', '')}", limit)
        text = _repr.repr(obj)
    except Exception as exc:
        return f"(repr unavailable: {type(exc).__name__})"
    return clip(" ".join(text.split()), limit)


def bounded_repr(obj: Any, limit: int) -> str:
    """``repr(obj)`` with containers shortened by ``reprlib`` and the text cut to ``limit`` characters."""
    full = reprlib.Repr()
    full.maxlevel = 4
    full.maxlist = full.maxtuple = full.maxset = full.maxfrozenset = full.maxdeque = 50
    full.maxdict = 30
    full.maxstring = limit
    full.maxlong = 400
    full.maxother = limit
    try:
        return clip(full.repr(obj), limit)
    except Exception as exc:
        return f"(repr unavailable: {type(exc).__name__}: {exc})"


def _is_nbagent(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) if isinstance(obj, type | types.FunctionType) else None
    module = module or type(obj).__module__ or ""
    return module == "nbagent" or module.startswith("nbagent.")


def is_user_variable(name: str, value: Any, hidden: Mapping[str, Any]) -> bool:
    """A name the user made: not private, not an IPython internal, not a module, not nbagent's."""
    if name.startswith("_") or name in hidden:
        return False
    return not isinstance(value, types.ModuleType) and not _is_nbagent(value)


def user_variables(namespace: Mapping[str, Any], hidden: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The user's variables in definition order (from a snapshot of the namespace's items)."""
    return [(n, v) for n, v in list(namespace.items()) if is_user_variable(n, v, hidden)]


def list_variables_text(namespace: Mapping[str, Any], hidden: Mapping[str, Any]) -> str:
    """One line per user variable, ``name · type · shape/len · preview``, bounded."""
    rows = user_variables(namespace, hidden)
    if not rows:
        return "The user's namespace has no variables yet."
    lines = [f"{len(rows)} variable{'s' if len(rows) != 1 else ''} (name · type · shape/len · preview):"]
    used = len(lines[0])
    shown = 0
    for name, value in rows[:MAX_VARIABLES]:
        parts = [name, type_name(value), size_of(value), one_line_preview(value)]
        line = " · ".join(p for p in parts if p)
        if used + len(line) + 1 > LIST_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    if shown < len(rows):
        lines.append(f"… and {len(rows) - shown} more not shown; describe_variable(name) looks at one.")
    return "\n".join(lines)


class UnknownVariable(LookupError):
    """``describe_variable`` was given a name the user's namespace does not hold."""


def lookup(namespace: Mapping[str, Any], hidden: Mapping[str, Any], name: str) -> Any:
    """The value of the user's variable ``name``; ``UnknownVariable`` names close matches otherwise."""
    visible = [n for n, _ in user_variables(namespace, hidden)]
    if not name.isidentifier():
        raise UnknownVariable(
            f"{name!r} is not a variable name; describe_variable takes one name such as "
            f"{visible[0] if visible else 'df'!r} (run_code evaluates expressions)"
        )
    if name in hidden:
        raise UnknownVariable(
            f"{name!r} belongs to IPython, not to the user's variables (see list_variables)"
        )
    if name in namespace and not name.startswith("__"):
        value = namespace[name]
        if not isinstance(value, types.ModuleType) and not _is_nbagent(value):
            return value
    close = difflib.get_close_matches(name, visible, n=5, cutoff=0.6)
    if close:
        hint = "close matches: " + ", ".join(close)
    elif visible:
        hint = "the user's variables include: " + ", ".join(visible[:15])
    else:
        hint = "the user's namespace has no variables yet"
    raise UnknownVariable(f"no variable named {name!r} in the user's namespace; {hint}")


def describe_text(namespace: Mapping[str, Any], hidden: Mapping[str, Any], name: str) -> str:
    """The §9.3 summary of a DataFrame (as ``%inject`` makes it), a bounded preview otherwise."""
    from nbagent import context

    value = lookup(namespace, hidden, name)
    if context.is_dataframe(value):
        return context.dataframe(value, name=name).plain_text
    return context.variable(value, name).plain_text
