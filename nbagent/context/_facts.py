"""Facts about a pandas or polars frame, computed once through narwhals and rendered many times.

Everything here returns plain strings and numbers (not yet escaped): rendering and the token budget
live in ``_render``. pandas, polars, narwhals and numpy are imported inside functions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nbagent.context._text import clip, format_bytes, format_number, format_value

SAMPLE_ROWS = 100_000
"""Frames longer than this get their statistics from a fixed-seed sample of this many rows."""
SAMPLE_SEED = 0
"""The seed of that sample: the same frame always yields the same summary."""
WIDE_COLUMNS = 30
"""Frames with more columns than this get full statistics for their edge columns only."""
MEASURED_COLUMNS = 1_000
"""pandas frames with more columns than this get their memory extrapolated per dtype."""
_PROBE_COLUMNS = 20
WIDE_FIRST, WIDE_LAST = 10, 5
"""How many leading and trailing columns of a wide frame get full statistics."""
TOP_VALUES = 5
TOP_MAX_DISTINCT = 50
SAMPLES = 3
SAMPLE_CHARS = 80
TOP_CHARS = 40
CELL_CHARS = 40
_SCAN = 200  # leading non-null values scanned for samples and for "is this short text"
ELLIPSIS_COLUMN = "…"


@dataclass(frozen=True)
class ColumnFacts:
    """What the summary says about one column; ``error`` set means its statistics were unavailable."""

    name: str
    dtype: str
    has_stats: bool = False
    non_null: int | None = None
    nulls: int | None = None
    distinct: int | None = None
    numbers: tuple[tuple[str, str], ...] = ()
    top: tuple[tuple[str, int], ...] = ()
    samples: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class FrameFacts:
    """What the summary says about a whole frame."""

    library: str
    type_name: str
    n_rows: int
    columns: tuple[ColumnFacts, ...]
    index: str | None = None
    head_header: tuple[str, ...] = ()
    head_rows: tuple[tuple[str, ...], ...] = ()
    memory: str | None = None
    sampled_rows: int | None = None
    wide: bool = False
    schema_only: bool = False

    @property
    def n_cols(self) -> int:
        return len(self.columns)


def _native_kind(obj: Any) -> tuple[str, str] | None:
    """``(library, "DataFrame" | "Series")`` for (subclasses of) pandas and polars frames and series."""
    for cls in type(obj).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("pandas", "polars") and cls.__name__ in ("DataFrame", "Series"):
            return root, cls.__name__
    return None


def library_of(obj: Any) -> str | None:
    """``"pandas"`` or ``"polars"`` when ``obj`` is (a subclass of) one of their frames or series."""
    kind = _native_kind(obj)
    return None if kind is None else kind[0]


def type_name(obj: Any) -> str:
    """``pandas.DataFrame``-style name: the top-level package and the class."""
    cls = type(obj)
    return f"{cls.__module__.partition('.')[0]}.{cls.__qualname__}"


def collect(obj: Any, *, rows: int, schema_only: bool) -> FrameFacts:
    """Compute the facts for a pandas/polars DataFrame or Series."""
    import narwhals as nw

    kind = _native_kind(obj)
    if kind is None:
        raise TypeError(
            f"expected a pandas or polars DataFrame or Series, got {type_name(obj)}; "
            "use nbagent.context.variable() for other objects"
        )
    library, shape = kind
    native = obj.to_frame() if shape == "Series" else obj
    names = [str(c) for c in native.columns]
    if library == "pandas":
        dtypes = [str(d) for d in native.dtypes.tolist()]
        # Positional keys make duplicate and non-string column names safe to select.
        keys = [f"c{i}" for i in range(len(names))]
        frame = nw.from_native(native.set_axis(keys, axis=1), eager_only=True)
    else:
        dtypes = [str(d) for d in native.dtypes]
        keys = names
        frame = nw.from_native(native, eager_only=True)
    n_rows = len(frame)
    index = _pandas_index(native) if library == "pandas" else None
    if schema_only:
        columns = tuple(ColumnFacts(name=n, dtype=d) for n, d in zip(names, dtypes, strict=True))
        return FrameFacts(library, type_name(obj), n_rows, columns, index=index, schema_only=True)

    wide = len(keys) > WIDE_COLUMNS
    chosen = _edges(len(keys)) if wide else list(range(len(keys)))
    positions = _sample_positions(n_rows)
    sample = frame.select([keys[i] for i in chosen])
    if positions is not None:
        sample = sample[positions]
    columns = []
    for i, (name, dtype) in enumerate(zip(names, dtypes, strict=True)):
        if i in chosen:
            columns.append(_column(frame, sample, keys[i], name, dtype))
        else:
            columns.append(ColumnFacts(name=name, dtype=dtype))
    header, head_rows = _head(native, frame, keys, names, chosen, rows, library)
    return FrameFacts(
        library=library,
        type_name=type_name(obj),
        n_rows=n_rows,
        columns=tuple(columns),
        index=index,
        head_header=header,
        head_rows=head_rows,
        memory=_memory(native, library, positions),
        sampled_rows=None if positions is None else len(positions),
        wide=wide,
    )


def _edges(n: int) -> list[int]:
    return list(range(WIDE_FIRST)) + list(range(n - WIDE_LAST, n))


def _sample_positions(n_rows: int) -> Any:
    """Sorted fixed-seed row positions for frames over ``SAMPLE_ROWS`` rows, else None."""
    if n_rows <= SAMPLE_ROWS:
        return None
    import numpy as np

    rng = np.random.default_rng(SAMPLE_SEED)
    return np.sort(rng.choice(n_rows, size=SAMPLE_ROWS, replace=False))


def _column(frame: Any, sample: Any, key: str, name: str, dtype: str) -> ColumnFacts:
    """Full statistics for one column, or a column that says why they are unavailable."""
    try:
        return _column_stats(frame, sample, key, name, dtype)
    except Exception as exc:
        return ColumnFacts(name=name, dtype=dtype, error=clip(f"{type(exc).__name__}: {exc}", 120))


def _column_stats(frame: Any, sample: Any, key: str, name: str, dtype: str) -> ColumnFacts:
    import narwhals as nw

    full = frame.get_column(key)
    nulls = int(full.null_count())
    non_null = len(full) - nulls
    if non_null == 0:
        return ColumnFacts(name=name, dtype=dtype, has_stats=True, non_null=0, nulls=nulls, distinct=0)
    values = sample.get_column(key).drop_nulls()
    kind = values.dtype
    distinct = int(values.n_unique())
    numbers: tuple[tuple[str, str], ...] = ()
    if kind.is_numeric():
        numbers = tuple(
            (label, format_number(value))
            for label, value in (
                ("min", values.min()),
                ("max", values.max()),
                ("mean", values.mean()),
                ("std", values.std()),
            )
        )
    elif kind.is_temporal():
        numbers = (("min", format_value(values.min())), ("max", format_value(values.max())))
    leading = values.head(_SCAN).to_list()
    top: tuple[tuple[str, int], ...] = ()
    categorical = kind == nw.Boolean or kind == nw.Categorical or kind == nw.Enum
    short_text = (
        (kind == nw.String or kind == nw.Object)
        and distinct < len(values)
        and (distinct <= TOP_MAX_DISTINCT or 2 * distinct <= len(values))
        and all(len(format_value(v)) <= SAMPLE_CHARS for v in leading)
    )
    if categorical or short_text:
        top = _top_values(values)
    return ColumnFacts(
        name=name,
        dtype=dtype,
        has_stats=True,
        non_null=non_null,
        nulls=nulls,
        distinct=distinct,
        numbers=numbers,
        top=top,
        samples=_samples(leading),
    )


def _top_values(values: Any) -> tuple[tuple[str, int], ...]:
    """The most frequent values with their counts; ties broken by value so the order is stable."""
    counts = values.value_counts(sort=True, name="count")
    key = counts.columns[0]
    try:
        counts = counts.sort(["count", key], descending=[True, False])
        rows = counts.head(4 * TOP_VALUES).rows()
    except Exception:
        rows = sorted(counts.rows(), key=lambda r: (-int(r[1]), format_value(r[0])))
    top = [(_quoted(v, TOP_CHARS), int(c)) for v, c in rows if int(c) > 0]
    return tuple(top[:TOP_VALUES])


def _samples(leading: list[Any]) -> tuple[str, ...]:
    """Up to ``SAMPLES`` distinct leading values, each cut to about ``SAMPLE_CHARS`` characters."""
    seen: list[str] = []
    for value in leading:
        text = _quoted(value, SAMPLE_CHARS)
        if text not in seen:
            seen.append(text)
            if len(seen) == SAMPLES:
                break
    return tuple(seen)


def _quoted(value: Any, limit: int) -> str:
    """A value for a list: strings cut to ``limit`` and then quoted, anything else cut to ``limit``."""
    if isinstance(value, str):
        return format_value(clip(value, limit), quote_strings=True)
    return clip(format_value(value), limit)


def _head(
    native: Any, frame: Any, keys: list[str], names: list[str], chosen: list[int], rows: int, library: str
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The first ``rows`` rows as strings, limited to the columns that have statistics."""
    if rows <= 0 or len(frame) == 0:
        return (), ()
    try:
        head = frame.select([keys[i] for i in chosen]).head(rows).rows()
    except Exception as exc:
        return ("unavailable",), ((clip(f"{type(exc).__name__}: {exc}", 120),),)
    header = [names[i] for i in chosen]
    if len(chosen) < len(keys):
        header.insert(WIDE_FIRST, ELLIPSIS_COLUMN)
        head = [(*r[:WIDE_FIRST], ELLIPSIS_COLUMN, *r[WIDE_FIRST:]) for r in head]
    index = _pandas_head_index(native, rows) if library == "pandas" else None
    if index is not None:
        header.insert(0, index[0])
        head = [(label, *r) for label, r in zip(index[1], head, strict=False)]
    pandas = library == "pandas"
    return tuple(header), tuple(tuple(_cell(v, pandas) for v in r) for r in head)


def _cell(value: Any, nan_is_null: bool) -> str:
    try:
        return clip(format_value(value, nan_is_null=nan_is_null), CELL_CHARS)
    except Exception:
        return "unavailable"


def _pandas_index(native: Any) -> str | None:
    try:
        idx = native.index
        kind = type(idx).__name__
        if kind == "RangeIndex":
            return f"RangeIndex(start={idx.start}, stop={idx.stop}, step={idx.step})"
        if kind == "MultiIndex":
            return f"MultiIndex, {idx.nlevels} levels, names {[str(n) for n in idx.names]}"
        named = "" if idx.name is None else f", name {idx.name}"
        return f"{kind}{named}, dtype {idx.dtype}"
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


def _pandas_head_index(native: Any, rows: int) -> tuple[str, list[Any]] | None:
    """The head's index labels, unless the index is the default 0, 1, 2… range."""
    idx = native.index
    if type(idx).__name__ == "RangeIndex" and idx.start == 0 and idx.step == 1:
        return None
    label = "(index)" if idx.name is None else str(idx.name)
    return label, list(idx[:rows])


def _memory(native: Any, library: str, positions: Any) -> str | None:
    """Memory use: exact when cheap, else estimated (and marked ``≈``) from sampled rows or columns."""
    try:
        if library == "polars":
            return format_bytes(native.estimated_size())
        total = int(native.index.memory_usage(deep=positions is None))
        estimated = positions is not None
        if native.shape[1] <= MEASURED_COLUMNS:
            size, boxed = _pandas_bytes(native, positions)
            total += size
            estimated = estimated and boxed
        else:  # pandas measures column by column: extrapolate from a few columns of each dtype
            groups: dict[str, list[int]] = {}
            for i, dtype in enumerate(native.dtypes.tolist()):
                groups.setdefault(str(dtype), []).append(i)
            for ids in groups.values():
                probe = ids[:_PROBE_COLUMNS]
                size, _ = _pandas_bytes(native.iloc[:, probe], positions)
                total += int(size * len(ids) / len(probe))
            estimated = estimated or any(len(ids) > _PROBE_COLUMNS for ids in groups.values())
        return ("≈ " if estimated else "") + format_bytes(total)
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


def _pandas_bytes(native: Any, positions: Any) -> tuple[int, bool]:
    """Bytes of a pandas frame's columns, and whether Python objects were estimated from sampled rows."""
    if positions is None:
        return int(native.memory_usage(index=False, deep=True).sum()), False
    # Python-object columns (object, python-backed str) are costly to measure even shallowly.
    dtypes = native.dtypes.tolist()
    boxed = [i for i, d in enumerate(dtypes) if str(d) in ("object", "str", "string")]
    plain = sorted(set(range(len(dtypes))) - set(boxed))
    total = sum(int(native.iloc[:, i].memory_usage(index=False)) for i in plain)
    if boxed:
        probe = positions[:: max(len(positions) // 10_000, 1)]
        deep = native.iloc[probe, boxed].memory_usage(index=False, deep=True)
        total += int(deep.sum() * len(native) / len(probe))
    return total, bool(boxed)
