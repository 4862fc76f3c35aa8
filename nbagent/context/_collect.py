"""The facts of a frame, collected through narwhals (a lazy frame's through ``_lazy``).

Exact statistics (null counts, min, max, mean, std) are one ``select`` over every row; the costly ones
(distinct counts, top values, samples) use a fixed-seed sample of frames over ``SAMPLE_ROWS`` rows.
pandas- and polars-only details live in ``_pandas`` and ``_polars``. Libraries are imported here only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, time
from typing import Any

from nbagent.context import _lazy, _pandas, _polars
from nbagent.context._facts import (
    SAMPLE_ROWS,
    SAMPLE_SEED,
    WIDE_COLUMNS,
    WIDE_FIRST,
    WIDE_LAST,
    ColumnFacts,
    FrameFacts,
)
from nbagent.context._native import PANDAS_LIKE, is_lazy, native_kind, type_name
from nbagent.context._nested import Nested, format_nested, is_nested, nested
from nbagent.context._stats import Failure, exact_stats, failure, sampled_stats, select_stats
from nbagent.context._text import clip, format_bytes, format_number, format_value, printable

TOP_VALUES = 5
TOP_MAX_DISTINCT = 50
SAMPLES = 3
SAMPLE_CHARS = 80
TOP_CHARS = 40
CELL_CHARS = 40
SCAN = 200
"""Leading non-null values scanned for samples and for "is this short text"."""
ELLIPSIS_COLUMN = "…"

_INSTALL = 'pip install "nbagent[dataframes]"'


def collect(
    obj: Any, *, rows: int, schema_only: bool, whole_rows: int = 0, name: str | None = None
) -> FrameFacts:
    """The facts of a frame (``_native.native_kind``): a DataFrame or Series of pandas, polars,
    pyarrow, modin or cuDF through narwhals, or a lazy frame's schema and what it knows without
    running (``_lazy``; ``name`` goes into the sentence saying how to summarise its rows).

    A frame of at most ``whole_rows`` rows (and some columns) is collected whole: every row of every
    column as text, and no statistics (``FrameFacts.whole``).
    """
    kind = native_kind(obj)
    if kind is None:
        raise TypeError(
            f"expected a DataFrame or Series (pandas, polars, pyarrow, modin, cuDF) or a lazy frame "
            f"(polars LazyFrame, Dask, DuckDB, Ibis), got {type_name(obj)}; use "
            "nbagent.context.variable() for other objects"
        )
    library, shape = kind
    if is_lazy(library, shape):
        return _lazy_facts(obj, library, shape, name)
    nw = _narwhals(library)
    native = _eager_native(obj, shape)
    if library in PANDAS_LIKE:
        names, dtypes = _pandas.names_and_dtypes(native)
        frame = nw.from_native(_pandas.positional(native), eager_only=True)
        index = _pandas.index_text(native)
    elif library == "polars":
        names, dtypes = _polars.names_and_dtypes(native)
        frame = nw.from_native(native, eager_only=True)
        index = None
    else:  # pyarrow
        names, dtypes = [printable(n) for n in native.schema.names], [str(t) for t in native.schema.types]
        frame = nw.from_native(
            native.rename_columns([f"c{i}" for i in range(native.num_columns)]), eager_only=True
        )
        index = None
    n_rows = len(frame)
    named = tuple(ColumnFacts(n, d) for n, d in zip(names, dtypes, strict=True))
    schema = FrameFacts(library, type_name(obj), n_rows, named, index=index)
    if schema_only:
        return replace(schema, schema_only=True)

    keys = list(frame.columns)
    if 0 < n_rows <= whole_rows:
        header, all_rows = _head(native, frame, keys, names, list(range(len(keys))), n_rows, library)
        return replace(schema, head_header=header, head_rows=all_rows, whole=True)
    wide = len(keys) > WIDE_COLUMNS
    chosen = _edges(len(keys)) if wide else list(range(len(keys)))
    sampled = n_rows > SAMPLE_ROWS
    with warnings.catch_warnings():  # a library's RuntimeWarning would land in the user's cell
        warnings.simplefilter("ignore", RuntimeWarning)
        stats = _column_stats(frame, [keys[i] for i in chosen], sampled)
        header, head_rows = _head(native, frame, keys, names, chosen, rows, library)
    columns = tuple(
        _column(stats[keys[i]], name, dtype, n_rows) if keys[i] in stats else named[i]
        for i, (name, dtype) in enumerate(zip(names, dtypes, strict=True))
    )
    memory = _memory_text(native, library, sampled)
    return replace(
        schema,
        columns=columns,
        head_header=header,
        head_rows=head_rows,
        memory=memory,
        sampled_rows=SAMPLE_ROWS if sampled else None,
        wide=wide,
    )


def _lazy_facts(obj: Any, library: str, shape: str, name: str | None) -> FrameFacts:
    """A lazy frame's schema and what it knows, read without running it (see ``_lazy``)."""
    names, dtypes = _lazy.names_and_dtypes(obj, library, shape)
    columns = tuple(ColumnFacts(printable(n), d) for n, d in zip(names, dtypes, strict=True))
    return FrameFacts(
        library,
        type_name(obj),
        None,
        columns,
        schema_only=True,
        lazy=True,
        lazy_note=_lazy.how_to_summarise(library, shape, name),
        notes=_lazy.notes(obj, library, shape),
    )


def _eager_native(obj: Any, shape: str) -> Any:
    """A DataFrame of the frame's own library: a Series as a one-column frame, a pyarrow
    RecordBatch as a Table (zero-copy)."""
    if shape == "Series":
        return obj.to_frame()
    if shape == "RecordBatch":
        import pyarrow as pa

        return pa.Table.from_batches([obj])
    return obj


def _memory_text(native: Any, library: str, sampled: bool) -> str:
    if library in PANDAS_LIKE:
        return _pandas.memory_text(native, sampled)
    if library == "polars":
        return _polars.memory_text(native)
    try:
        return format_bytes(int(native.nbytes))  # pyarrow: the buffers' size
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


def _narwhals(library: str) -> Any:
    try:
        import narwhals.stable.v2 as nw
    except ImportError:
        raise ModuleNotFoundError(
            f"summarizing a {library} frame needs narwhals 2 or later, which is not installed; {_INSTALL}"
        ) from None
    return nw


def _edges(n: int) -> list[int]:
    return list(range(WIDE_FIRST)) + list(range(n - WIDE_LAST, n))


@dataclass(frozen=True)
class _Measured:
    """One column's raw statistics, before its facts are written."""

    exact: dict[str, Any]
    """Over all rows: ``{stat: value, None or Failure}`` (see ``_stats.exact_stats``)."""
    costly: dict[str, Any]
    """Over the sample (or all rows of a short frame), see ``_stats.sampled_stats``."""
    values: Any
    """The column of the sample (of all rows for categoricals), as a narwhals Series."""
    kind: str
    sampled: bool = False
    """Whether ``costly`` and ``values`` come from the sample rather than all rows."""


def _column_stats(frame: Any, keys: list[str], sampled: bool) -> dict[str, _Measured]:
    """Each chosen column's statistics: one select over all rows, and for a long frame a second one
    over its fixed-seed sample for the costly statistics, except of categoricals (booleans,
    categories), whose value counts are cheap and therefore exact."""
    schema = frame.schema
    kinds = {key: _kind(schema[key]) for key in keys}
    exact_keys = keys if not sampled else [k for k in keys if kinds[k] == "categorical"]
    plans = {key: {**exact_stats(schema[key]), **sampled_stats(False)} for key in exact_keys}
    plans |= {key: exact_stats(schema[key]) for key in keys if key not in plans}
    exact = select_stats(frame, plans)
    measured = {
        key: _Measured(exact[key], exact[key], frame.get_column(key), kinds[key]) for key in exact_keys
    }
    rest = [k for k in keys if k not in measured]
    if rest:
        sample = frame.select(rest).sample(n=SAMPLE_ROWS, seed=SAMPLE_SEED)
        costly = select_stats(sample, {key: sampled_stats(True) for key in rest})
        for key in rest:
            measured[key] = _Measured(exact[key], costly[key], sample.get_column(key), kinds[key], True)
    return measured


def _kind(dtype: Any) -> str:
    """``numeric``, ``temporal``, ``categorical`` (boolean, categorical, enum), ``text`` (string,
    Python objects) or ``other`` (lists, structs…)."""
    import narwhals.stable.v2 as nw

    if dtype.is_numeric():
        return "numeric"
    if dtype.is_temporal():
        return "temporal"
    if dtype == nw.Boolean or dtype == nw.Categorical or dtype == nw.Enum:
        return "categorical"
    if dtype == nw.String or dtype == nw.Object:
        return "text"
    return "other"


def _column(measured: _Measured, name: str, dtype: str, n_rows: int) -> ColumnFacts:
    """A column's facts; a failed statistic is listed as unavailable, a failed null count fails all."""
    exact, costly = measured.exact, measured.costly
    nulls = exact["nulls"]
    if isinstance(nulls, Failure) or nulls is None:
        reason = nulls.reason if isinstance(nulls, Failure) else "no null count"
        return ColumnFacts(name=name, dtype=dtype, error=reason)
    nulls = int(nulls)
    non_null = n_rows - nulls
    counted = ColumnFacts(name=name, dtype=dtype, has_stats=True, non_null=non_null, nulls=nulls)
    if non_null == 0:
        return replace(counted, distinct=0)
    unavailable: list[tuple[str, str]] = []
    numbers = _numbers(exact, measured.kind, unavailable)
    leading: list[Any] = []
    try:
        leading = measured.values.drop_nulls().head(SCAN).to_list()
    except Exception as exc:
        unavailable.append(("samples", failure(exc).reason))
    if measured.kind == "text" and leading and all(isinstance(v, _WHEN) for v in leading):
        numbers += _text_extremes(measured, unavailable)
    held = _nested(measured, leading, unavailable)
    if held is not None:
        nested_samples = _samples(leading, lambda v: format_nested(v, SAMPLE_CHARS))
        return replace(
            counted,
            numbers=numbers,
            samples=nested_samples,
            nested=held.describe() + (" (in the sample)" if measured.sampled else ""),
            unavailable=tuple(unavailable),
        )
    distinct = costly["distinct"]
    if isinstance(distinct, Failure):
        unavailable.append(("distinct", distinct.reason))
        distinct = None
    top = _column_top(measured, None if distinct is None else int(distinct), non_null, leading, unavailable)
    samples: tuple[str, ...] = ()
    if leading:
        try:
            samples = _samples(leading, lambda v: _quoted(v, SAMPLE_CHARS))
        except Exception as exc:
            unavailable.append(("samples", failure(exc).reason))
    return replace(
        counted,
        distinct=None if distinct is None else int(distinct),
        numbers=numbers,
        top=top,
        samples=samples,
        distinct_sampled=measured.sampled and distinct is not None,
        top_scaled=measured.sampled and bool(top),
        unavailable=tuple(unavailable),
    )


def _column_top(
    measured: _Measured,
    distinct: int | None,
    non_null: int,
    leading: list[Any],
    unavailable: list[tuple[str, str]],
) -> tuple[tuple[str, int], ...]:
    """A column's top values when they say something (scaled to all rows when counted in a sample);
    a failure is listed as unavailable."""
    in_sample = int(measured.costly.get("count", non_null) or 0)
    if distinct is None or not _wants_top(measured.kind, distinct, in_sample, leading):
        return ()
    try:
        top = _top_values(measured.values.drop_nulls())
    except Exception as exc:
        unavailable.append(("top", failure(exc).reason))
        return ()
    if measured.sampled and top and in_sample:
        top = tuple((v, round(c * non_null / in_sample)) for v, c in top)
    return top


_WHEN = (date, time)
"""Python dates, times and datetimes (pandas' Timestamp included), held in an object column when their
time zones differ or they were built one by one."""


def _text_extremes(measured: _Measured, unavailable: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """min and max of an object column of dates or datetimes (mixed time zones compare as instants),
    over all rows, or over the sample of a long frame (and then marked so)."""
    try:
        values = measured.values.drop_nulls().to_list()
        low, high = min(values), max(values)
    except Exception as exc:
        unavailable.append(("min, max", failure(exc).reason))
        return ()
    mark = " in sample" if measured.sampled else ""
    return ((f"min{mark}", format_value(low)), (f"max{mark}", format_value(high)))


def _nested(measured: _Measured, leading: list[Any], unavailable: list[tuple[str, str]]) -> Nested | None:
    """What a column of lists or structs holds (over the sample's values), None for other columns."""
    if measured.kind not in ("text", "other") or not leading or not all(map(is_nested, leading)):
        return None
    try:
        return nested(measured.values.drop_nulls().to_list())
    except Exception as exc:
        unavailable.append(("lengths", failure(exc).reason))
        return None


def _numbers(
    exact: dict[str, Any], kind: str, unavailable: list[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """min, max, mean, std in display order; for floats with infinities or NaNs the mean and std are
    over the finite values (and say so) and those values are counted."""
    counts = [(label, exact.get(stat)) for label, stat in (("infinite", "infinite"), ("NaN", "nan"))]
    special = any(isinstance(v, int) and v > 0 for _, v in counts)
    fmt = format_number if kind == "numeric" else format_value
    labels = {"mean": "finite mean", "std": "finite std"} if special else {}
    out: list[tuple[str, str]] = []
    for stat in ("min", "max", "mean", "std"):
        value = exact.get(stat)
        if isinstance(value, Failure):
            unavailable.append((stat, value.reason))
        elif value is not None:
            out.append((labels.get(stat, stat), fmt(value)))
    for label, value in counts:
        if isinstance(value, Failure):
            unavailable.append((label, value.reason))
        elif value:
            out.append((label, f"{int(value):,}"))
    return tuple(out)


def _wants_top(kind: str, distinct: int, in_sample: int, leading: list[Any]) -> bool:
    """Top values for booleans and categoricals, and for short text that repeats."""
    if kind == "categorical":
        return True
    return (
        kind == "text"
        and distinct < in_sample
        and (distinct <= TOP_MAX_DISTINCT or 2 * distinct <= in_sample)
        and all(len(format_value(v)) <= SAMPLE_CHARS for v in leading)
    )


def _top_values(values: Any) -> tuple[tuple[str, int], ...]:
    """The most frequent values with their counts; ties broken by value so the order is stable."""
    counts = values.value_counts(sort=True, name="count")
    key = counts.columns[0]
    try:
        rows = counts.sort(["count", key], descending=[True, False]).head(4 * TOP_VALUES).rows()
    except Exception:  # values that do not order among themselves: order their text instead
        rows = sorted(counts.rows(), key=lambda r: (-int(r[1]), format_value(r[0])))
    top = [(_quoted(v, TOP_CHARS), int(c)) for v, c in rows if int(c) > 0]
    return tuple(top[:TOP_VALUES])


def _samples(leading: list[Any], shown: Callable[[Any], str]) -> tuple[str, ...]:
    """Up to ``SAMPLES`` distinct leading values, each ``shown`` as about ``SAMPLE_CHARS`` characters."""
    seen: list[str] = []
    for value in leading:
        text = shown(value)
        if text not in seen:
            seen.append(text)
            if len(seen) == SAMPLES:
                break
    return tuple(seen)


def _quoted(value: Any, limit: int) -> str:
    """A value for a list: strings cut to ``limit`` and then quoted, anything else cut to ``limit``."""
    if isinstance(value, str):
        return format_value(clip(printable(value), limit), quote_strings=True)
    return clip(printable(format_value(value)), limit)


def _head(
    native: Any, frame: Any, keys: list[str], names: list[str], chosen: list[int], rows: int, library: str
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The first ``rows`` rows as text, limited to the columns that have statistics."""
    if rows <= 0 or len(frame) == 0:
        return (), ()
    try:
        if keys:
            head = frame.select([keys[i] for i in chosen]).head(rows).rows()
        else:  # no columns: the rows are their index labels alone
            head = [()] * min(rows, len(frame))
    except Exception as exc:
        return ("unavailable",), ((failure(exc).reason,),)
    header = [names[i] for i in chosen]
    if len(chosen) < len(keys):
        header.insert(WIDE_FIRST, ELLIPSIS_COLUMN)
        head = [(*r[:WIDE_FIRST], ELLIPSIS_COLUMN, *r[WIDE_FIRST:]) for r in head]
    index = _pandas.head_index(native, rows) if library in PANDAS_LIKE else None
    if index is not None:
        header.insert(0, index[0])
        head = [(label, *r) for label, r in zip(index[1], head, strict=False)]
    pandas = library in PANDAS_LIKE
    return tuple(header), tuple(tuple(_cell(v, pandas) for v in r) for r in head)


def _cell(value: Any, nan_is_null: bool) -> str:
    try:
        if is_nested(value) and not isinstance(value, tuple):  # a tuple is a MultiIndex label
            return format_nested(value, CELL_CHARS)
        return clip(printable(format_value(value, nan_is_null=nan_is_null)), CELL_CHARS)
    except Exception:
        return "unavailable"
