"""Which text says what an object holds: its ``repr``, its ``str``, a rich ``_repr_markdown_``, or,
for a container of frames, one line per frame; and what the chosen text left out.

A ``repr`` such as ``<…Results object at 0x7f…>`` or ``<class '…SimpleTable'>`` says nothing, while
the object's ``str`` (statsmodels' summaries and tables) or ``_repr_markdown_`` often says everything:
those are preferred then. Containers go through a size-limited ``reprlib`` that records each place it
shortened (items past its limits, nesting past its depth), so the preview can say so.
"""

from __future__ import annotations

import itertools
import re
import reprlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_SAYS_NOTHING = re.compile(r"<[^<>]*\b(object|instance) at 0x[0-9a-fA-F]+>|<class '[^']*'>", re.ASCII)
ITEMS, KEYS, LEVEL = 50, 30, 4
"""Items of a sequence or set, keys of a mapping, and nesting levels a container preview shows."""
STRING_CHARS = 400
"""Characters of a string inside a container."""
ATTRIBUTES = 100
BYTES = 2_000
"""Bytes of a bytes object put through ``repr``."""
"""Public attribute names listed for an object whose every text says nothing."""


@dataclass(frozen=True)
class Shown:
    """The text chosen for an object, how it was made, and what it left out before any budget cut."""

    text: str
    form: str
    """``text`` (a string as written), ``repr``, ``str``, ``markdown`` or ``items`` (frames by line)."""
    elided: str | None = None
    """What the text itself shortened (reprlib's limits, numpy's summarisation), in words."""


_SEQUENCES = frozenset({"list", "tuple", "set", "frozenset", "deque"})
"""The types ``reprlib`` cuts at ``max<type>`` items (each ``ITEMS`` here)."""


class _Repr(reprlib.Repr):
    """``reprlib.Repr`` keeping a dict's insertion order (``reprlib`` sorts keys), as ``repr`` does,
    and noting every place it shortens."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = LEVEL
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = ITEMS
        self.maxdict, self.maxstring, self.maxlong, self.maxother = KEYS, STRING_CHARS, 200, 2000
        self.cuts: set[str] = set()

    def repr1(self, x: Any, level: int) -> str:
        if level <= 0 and isinstance(x, list | tuple | set | frozenset | dict) and x:
            self.cuts.add(f"nesting past {LEVEL} levels")
        kind = type(x).__name__  # what reprlib dispatches on: ``repr_list`` shows exactly a ``list``
        if kind in _SEQUENCES:
            self._count(x, getattr(self, f"max{kind}"), "items")
        return super().repr1(x, level)

    def _count(self, x: Any, limit: int, what: str) -> None:
        try:
            if len(x) > limit:
                self.cuts.add(f"{what} past the first {limit}")
        except Exception:
            pass

    def repr_str(self, x: Any, level: int) -> str:
        if len(x) > self.maxstring:
            self.cuts.add(f"strings inside past {self.maxstring} characters")
        return super().repr_str(x, level)

    def repr_instance(self, x: Any, level: int) -> str:
        out = super().repr_instance(x, level)
        if "..." in out and len(out) >= self.maxother - 3:
            self.cuts.add(f"reprs inside past {self.maxother:,} characters")
        return out

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        self._count(x, self.maxdict, "keys")
        pieces = [
            f"{self.repr1(key, level - 1)}: {self.repr1(value, level - 1)}"
            for key, value in itertools.islice(x.items(), self.maxdict)
        ]
        if len(x) > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"


def says_nothing(text: str) -> bool:
    """Whether a text is only a default ``repr`` (``<x.Y object at 0x…>``, ``<class 'x.Y'>``)."""
    return _SAYS_NOTHING.fullmatch(text.strip()) is not None or (
        text.startswith("<class '") and _SAYS_NOTHING.match(text) is not None
    )


def shown(obj: Any, name: str) -> Shown:
    """The best text for ``obj`` (see the module); ``name`` is the expression that gave it, for hints."""
    if isinstance(obj, str):
        return Shown(obj, "text")
    frames = _frames_inside(obj, name)
    if frames is not None:
        return Shown(frames, "items")
    r = _Repr()
    try:  # containers through the limits; any other object's own repr whole (the budget cuts it)
        if isinstance(obj, bytes | bytearray) and len(obj) > BYTES:
            r.cuts.add(f"bytes past the first {BYTES:,}")
            text = repr(obj[:BYTES])
        else:
            text = r.repr(obj) if hasattr(r, f"repr_{type(obj).__name__}") else repr(obj)
    except Exception as exc:
        text = f"repr unavailable ({type(exc).__name__}: {exc})"
    elided = "; ".join(sorted(r.cuts)) or _numpy_elided(obj)
    if not says_nothing(text) and not text.startswith("repr unavailable"):
        return Shown(text, "repr", elided)
    better = _better_than_repr(obj)
    if better is not None:
        return Shown(*better)
    return Shown(text + _attributes(obj, name), "repr", elided)


def telling_text(obj: Any) -> str:
    """An object's ``repr``, or its ``str()`` or ``_repr_markdown_`` where the ``repr`` says nothing
    (for one-line previews: no attributes listed, no limits applied)."""
    text = repr(obj)
    if not says_nothing(text):
        return text
    better = _better_than_repr(obj)
    return text if better is None else better[0]


def _better_than_repr(obj: Any) -> tuple[str, str] | None:
    """``(text, form)`` from the object's own ``str`` or ``_repr_markdown_``, when one says something."""
    for form, make in (("str", _own_str), ("markdown", _markdown)):
        try:
            other = make(obj)
        except Exception:
            continue
        if other and other.strip() and not says_nothing(other):
            return other, form
    return None


def _own_str(obj: Any) -> str | None:
    """``str(obj)`` when its class defines ``__str__`` itself (not ``object``'s, which is ``repr``)."""
    if type(obj).__str__ is object.__str__:
        return None
    return str(obj)


def _markdown(obj: Any) -> str | None:
    method = getattr(type(obj), "_repr_markdown_", None)
    if method is None:
        return None
    out = method(obj)
    return out[0] if isinstance(out, tuple) else out


def _attributes(obj: Any, name: str) -> str:
    """For an object whose every text says nothing: its public attribute names (none is read)."""
    try:
        names = [n for n in dir(obj) if not n.startswith("_")]
    except Exception:
        return ""
    if not names:
        return ""
    listed = ", ".join(names[:ATTRIBUTES]) + (
        f", … {len(names) - ATTRIBUTES:,} more" if len(names) > ATTRIBUTES else ""
    )
    hint = f"; `{name}.summary()` may summarise it" if "summary" in names else ""
    return (
        f"\n(its repr says nothing about its contents; public attributes, none read: {listed}. "
        f"Inject one as `{name}.ATTRIBUTE`{hint})"
    )


def _frames_inside(obj: Any, name: str) -> str | None:
    """For a dict, list or tuple holding DataFrames: one line per item, each frame by its type, shape
    and columns and the expression that injects its summary; None for other objects."""
    from nbagent.context.frames import frame_outline, is_dataframe

    if isinstance(obj, Mapping):
        items = list(itertools.islice(obj.items(), ITEMS + 1))
    elif isinstance(obj, list | tuple):
        items = list(enumerate(obj[: ITEMS + 1]))
    else:
        return None
    try:
        if not any(is_dataframe(v) for _, v in items):
            return None
    except Exception:
        return None
    lines: list[str] = []
    for key, value in items[:ITEMS]:
        label = reprlib.repr(key)
        outline = frame_outline(value) if is_dataframe(value) else None
        if outline is None:
            lines.append(f"{label}: {reprlib.repr(value)}")
            continue
        rows, columns = outline
        size = f"? x {len(columns)} (lazy)" if rows is None else f"{rows} x {len(columns)}"
        cols = ", ".join(columns[:12]) + (f", … {len(columns) - 12} more" if len(columns) > 12 else "")
        kind = f"{type(value).__module__.partition('.')[0]}.{type(value).__qualname__}"
        lines.append(f"{label}: {kind} {size}, columns {cols} (`%inject {name}[{label}]` for its summary)")
    total = len(obj)
    if total > ITEMS:
        lines.append(f"… {total - ITEMS:,} more items")
    return "\n".join(lines)


def frames_line(obj: Any) -> str | None:
    """One line for a dict, list or tuple holding frames (``dict of 2 frames: train 300×2, raw
    lazy ?×1``), read without a ``repr`` (a DuckDB relation's runs its query); None otherwise."""
    from nbagent.context.frames import frame_outline, is_dataframe

    if isinstance(obj, Mapping):
        items = list(itertools.islice(obj.items(), ITEMS))
    elif isinstance(obj, list | tuple):
        items = list(enumerate(obj[:ITEMS]))
    else:
        return None
    try:
        held = [(k, frame_outline(v)) for k, v in items if is_dataframe(v)]
    except Exception:
        return None
    if not held:
        return None
    parts = []
    for key, outline in held:
        if outline is not None:
            rows, columns = outline
            parts.append(f"{reprlib.repr(key)} {'lazy ?' if rows is None else rows}×{len(columns)}")
    kind = type(obj).__name__
    return f"{kind} of {len(held)} frame{'s' if len(held) != 1 else ''}: " + ", ".join(parts)


def _numpy_elided(obj: Any) -> str | None:
    np = sys.modules.get("numpy")
    if np is None or not isinstance(obj, np.ndarray):
        return None
    threshold = int(np.get_printoptions().get("threshold", 1000))
    if obj.size > threshold:
        return (
            f"numpy shows arrays of over {threshold:,} items summarised; slice it "
            "or inject a statistic of it for more"
        )
    return None
