"""What only a pandas-like frame (pandas, modin, cuDF) has: positional column keys, its index, and its
memory use.

Everything else about a pandas frame goes through narwhals (``_collect``), as for polars.
"""

from __future__ import annotations

from typing import Any

from nbagent.context._text import format_bytes, printable

MEASURED_COLUMNS = 1_000
"""Frames with more columns than this get their memory extrapolated per dtype."""
_PROBE_COLUMNS = 20
_BOXED_PROBE_ROWS = 10_000


def names_and_dtypes(native: Any) -> tuple[list[str], list[str]]:
    """Column names as text (tuples of a MultiIndex, numbers and bytes through ``str``) and dtype names."""
    return [printable(str(c)) for c in native.columns], [str(d) for d in native.dtypes.tolist()]


def positional(native: Any) -> Any:
    """The frame with columns renamed ``c0``, ``c1``…: duplicate and non-string names become selectable.
    (pandas and modin rename through ``set_axis``; a library without it, through a shallow copy.)"""
    keys = [f"c{i}" for i in range(native.shape[1])]
    try:
        return native.set_axis(keys, axis=1)
    except (AttributeError, NotImplementedError, TypeError):
        renamed = native.copy(deep=False)
        renamed.columns = keys
        return renamed


def index_text(native: Any) -> str:
    """One line describing the row index."""
    try:
        idx = native.index
        kind = type(idx).__name__
        if kind == "RangeIndex":
            return f"RangeIndex(start={idx.start}, stop={idx.stop}, step={idx.step})"
        if kind == "MultiIndex":
            return f"MultiIndex, {idx.nlevels} levels, names {[printable(str(n)) for n in idx.names]}"
        named = "" if idx.name is None else f", name {printable(str(idx.name))}"
        return f"{kind}{named}, dtype {idx.dtype}"
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


def head_index(native: Any, rows: int) -> tuple[str, list[Any]] | None:
    """The head's index label and values, unless the index is the default 0, 1, 2… range."""
    idx = native.index
    if type(idx).__name__ == "RangeIndex" and idx.start == 0 and idx.step == 1:
        return None
    label = "(index)" if idx.name is None else printable(str(idx.name))
    return label, list(idx[:rows])


def memory(native: Any, sampled: bool) -> tuple[int, bool]:
    """Bytes used and whether that is an estimate: on a ``sampled`` (long) frame Python objects are
    measured on evenly spaced rows, and a very wide frame on a few columns per dtype."""
    total = int(native.index.memory_usage(deep=not sampled))
    estimated = sampled
    if native.shape[1] <= MEASURED_COLUMNS:
        size, boxed = _bytes(native, sampled)
        return total + size, estimated and boxed
    groups: dict[str, list[int]] = {}  # pandas measures column by column: probe a few of each dtype
    for i, dtype in enumerate(native.dtypes.tolist()):
        groups.setdefault(str(dtype), []).append(i)
    for ids in groups.values():
        probe = ids[:_PROBE_COLUMNS]
        size, _ = _bytes(native.iloc[:, probe], sampled)
        total += int(size * len(ids) / len(probe))
    return total, estimated or any(len(ids) > _PROBE_COLUMNS for ids in groups.values())


def memory_text(native: Any, sampled: bool) -> str:
    try:
        size, estimated = memory(native, sampled)
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"
    return ("≈ " if estimated else "") + format_bytes(size)


def _bytes(native: Any, sampled: bool) -> tuple[int, bool]:
    """Bytes of a frame's columns, and whether Python objects were estimated from some of the rows."""
    if not sampled:
        return int(native.memory_usage(index=False, deep=True).sum()), False
    # Python-object columns (object, python-backed str) are costly to measure even shallowly.
    dtypes = native.dtypes.tolist()
    boxed = [i for i, d in enumerate(dtypes) if str(d) in ("object", "str", "string")]
    plain = sorted(set(range(len(dtypes))) - set(boxed))
    total = sum(int(native.iloc[:, i].memory_usage(index=False)) for i in plain)
    if boxed:
        probe = list(range(0, len(native), max(len(native) // _BOXED_PROBE_ROWS, 1)))
        deep = native.iloc[probe, boxed].memory_usage(index=False, deep=True)
        total += int(deep.sum() * len(native) / len(probe))
    return total, bool(boxed)
