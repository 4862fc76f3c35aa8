"""What the built-in tools may see of the user's namespace, and how they show it (SPEC §9.4).

Read-only by construction: names are listed from a copy of the namespace's items, values are looked
at through ``repr`` (bounded by ``reprlib``), ``len`` and a ``shape`` attribute, and a DataFrame
through the same summary ``%inject`` queues (``nbagent.context.dataframe``). Nothing is assigned,
imported into or deleted from the namespace.

Private names (``_x``) are neither listed nor described. Secrets stay in the kernel: the text under a
secret-looking name (``OPENAI_API_KEY``, ``db_password``, a ``credentials`` dict; also such keys inside
a dict) and secret-shaped strings anywhere in a preview (``sk-…``, ``Bearer …``, the configured API
keys; see :mod:`nbagent.redaction`) are replaced by a note saying so.
"""

from __future__ import annotations

import difflib
import reprlib
import types
from collections import deque
from collections.abc import Mapping, Set, Sized
from itertools import islice
from typing import Any

from nbagent.context.preview import bounded
from nbagent.redaction import configured_secrets, looks_secret_name, scrub

MAX_VARIABLES = 100
"""Rows ``list_variables`` shows; the rest are counted."""

PREVIEW_CHARS = 100
"""Characters of the one-line preview per variable."""

LIST_CHARS = 12_000
"""The whole ``list_variables`` answer stays under this many characters."""

SECRET_MARK = "<value hidden: looks like a secret>"
"""What a secret in a preview becomes."""

_LOOKED_AT = 2_000
"""Strings of one preview searched for secrets before ``repr`` (the rest only as its text)."""

_SHOWN_ITEMS = 100
"""Items of a container a preview can show (``reprlib`` shows at most 50)."""

_REPR_SCRUBBED = 20_000
"""Characters of an object's ``repr`` kept (its start and its end) and scrubbed for a preview."""

_repr = bounded(reprlib.Repr(), level=3, items=12, keys=8, string=120, long=60, other=300)


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
    """``shape 100×3``, ``len 12`` or ``""``, from what the object states cheaply; a frame's from
    its schema and row count, a lazy frame's (Dask, DuckDB, Ibis, polars) without running it."""
    from nbagent.context import frame_outline, is_lazy_frame

    try:
        if is_lazy_frame(obj):  # its shape or len would run it (Dask computes every partition)
            outline = frame_outline(obj)
            columns = len(outline[1]) if outline is not None else "?"
            return f"lazy, ?×{columns} (rows unknown until it runs)"
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
    from nbagent.context import frame_outline, frames_line, native_kind

    try:
        held = frames_line(obj)  # frames inside: their outlines, not their reprs (which may run them)
        if held is not None:
            return clip(held, limit)
        kind = native_kind(obj)
        if kind is not None and kind[1] == "Series":
            return clip(f"series {getattr(obj, 'name', '')}", limit)
        outline = frame_outline(obj)  # read from the schema: a lazy frame's repr may run it (DuckDB)
        if outline is not None:
            return clip("columns: " + ", ".join(outline[1][:50]), limit)
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


class _Hidden:
    """Stands for a secret inside a container's preview."""

    def __repr__(self) -> str:
        return SECRET_MARK


_HIDDEN = _Hidden()


class _Shown:
    """Stands for an object in a preview: its ``repr``, already scrubbed."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _holds_text(value: Any, depth: int = 0) -> bool:
    """Whether a preview of ``value`` would show text: a string, or a container holding one."""
    if isinstance(value, str | bytes | bytearray):
        return True
    if depth > 2:
        return False
    try:
        if isinstance(value, Mapping):
            return any(_holds_text(k, 3) or _holds_text(v, depth + 1) for k, v in islice(value.items(), 100))
        if isinstance(value, list | tuple | Set):
            return any(_holds_text(v, depth + 1) for v in islice(value, 100))
    except Exception:
        return True  # it could not be looked at: treat it as text under a secret's name
    return False


def hidden_reason(name: str, value: Any) -> str | None:
    """The note shown instead of a variable's value when its name says it holds a secret."""
    if looks_secret_name(name) and _holds_text(value):
        return f"value hidden: looks like a secret (its name, {name})"
    return None


def without_secrets(value: Any, known: list[str] | None = None) -> Any:
    """``value``, or a copy of it for previews in which strings (also inside dicts, lists and tuples,
    to depth 4) have their secret-shaped parts replaced by :data:`SECRET_MARK`, and the text under
    secret-looking dict keys is that mark whole. Scrubbing before ``repr`` means a shortened repr
    never shows half a key."""
    return _Scrubber(configured_secrets() if known is None else known).copy(value, 0)


class _Scrubber:
    """One walk of :func:`without_secrets`: the configured keys read once, only the items a preview
    shows (the first ones, a dict's keys sorted as ``reprlib`` shows them), a bounded number of strings."""

    def __init__(self, known: list[str]) -> None:
        self.known = known
        self.budget = _LOOKED_AT

    def copy(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if depth > 4 or value is None or isinstance(value, int | float | complex | Set | deque):
            return value  # nothing to hide, or shown by reprlib piece by piece (scrubbed as text)
        try:
            if isinstance(value, Mapping):
                keys = _shown_keys(value)
                copied = {k: self.entry(k, v, depth) for k, v in value.items() if k in keys}
                same = len(keys) == len(value) and all(copied[k] is value[k] for k in keys)
                return value if same else copied
            if type(value) is tuple and len(value) == 2 and self.is_pair(value):
                return (value[0], _HIDDEN)  # ("password", "…"): a name and its value
            if type(value) in (list, tuple):
                head = value[:_SHOWN_ITEMS]
                items = [self.copy(v, depth + 1) for v in head]
                if len(head) == len(value) and all(a is b for a, b in zip(items, head, strict=True)):
                    return value
                return items if isinstance(value, list) else tuple(items)
        except Exception:
            return value
        return self.other(value)

    def other(self, value: Any) -> Any:
        """Any other object: its whole ``repr`` scrubbed before a preview shortens it (``reprlib``
        computes the whole ``repr`` of such objects anyway), so a cut never leaves half a key."""
        from nbagent.context import is_dataframe, telling_text

        if self.budget <= 0 or isinstance(value, type | types.FunctionType) or is_dataframe(value):
            return value
        self.budget -= 1
        try:
            text = telling_text(value)  # its str() where its repr says nothing (a statsmodels table)
        except Exception:
            return value  # the preview says its repr is unavailable
        if len(text) > _REPR_SCRUBBED:
            text = f"{text[: _REPR_SCRUBBED // 2]}...{text[-_REPR_SCRUBBED // 2 :]}"
        return _Shown(scrub(text, self.known, marker=SECRET_MARK, environment=False))

    @staticmethod
    def is_pair(value: tuple[Any, Any]) -> bool:
        name, held = value
        return isinstance(name, str) and looks_secret_name(name) and _holds_text(held)

    def entry(self, key: Any, value: Any, depth: int) -> Any:
        if isinstance(key, str) and looks_secret_name(key) and _holds_text(value):
            return _HIDDEN
        return self.copy(value, depth + 1)

    def text(self, value: str) -> str:
        if self.budget <= 0:
            return value
        self.budget -= 1
        clean = scrub(value, self.known, marker=SECRET_MARK, environment=False)
        return value if clean == value else clean


def _shown_keys(mapping: Mapping[Any, Any]) -> set[Any]:
    """The keys a preview may show: the first ``_SHOWN_ITEMS`` in order and sorted (as ``reprlib`` does)."""
    keys = set(islice(mapping, _SHOWN_ITEMS))
    try:
        keys.update(sorted(mapping)[:_SHOWN_ITEMS])
    except Exception:
        pass
    return keys


def shown_safely(text: str, known: list[str] | None = None) -> str:
    """A preview's text with secret-shaped strings and configured keys (``known``: read from the
    environment when not given) replaced by :data:`SECRET_MARK`."""
    if known is None:
        return scrub(text, marker=SECRET_MARK)
    return scrub(text, known, marker=SECRET_MARK, environment=False)


def _preview(name: str, value: Any, known: list[str]) -> str:
    reason = hidden_reason(name, value)
    if reason is not None:
        return reason
    text = one_line_preview(without_secrets(value, known), LIST_CHARS)
    return clip(shown_safely(text, known), PREVIEW_CHARS)


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
    known = configured_secrets()
    for name, value in rows[:MAX_VARIABLES]:
        parts = [name, type_name(value), size_of(value), _preview(name, value, known)]
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
    if name.startswith("_"):
        raise UnknownVariable(
            f"{name!r} is a private name (it starts with '_'); nbagent does not show private names "
            "(see list_variables)"
        )
    if name in namespace:
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
    reason = hidden_reason(name, value)
    if reason is not None:
        size = size_of(value)
        return f"{name} · {type_name(value)}{f' · {size}' if size else ''} · {reason}"
    if context.is_dataframe(value):
        summary = context.dataframe(
            value, name=name, hidden_columns=looks_secret_name, hidden_mark=SECRET_MARK
        )
        return shown_safely(summary.plain_text)
    if not isinstance(value, str | Mapping | list | tuple):  # its chosen text is scrubbed whole
        return context.variable(value, name, scrub=shown_safely).plain_text
    shown = without_secrets(value)
    text = context.variable(shown, name).plain_text
    if shown is not value:  # the header (type, len) is the value's; the body is the scrubbed copy's
        header = context.variable(value, name).plain_text.split("\n", 1)[0]
        text = header + "\n" + text.split("\n", 1)[1]
    return shown_safely(text)
