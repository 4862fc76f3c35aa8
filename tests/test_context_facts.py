"""The facts a DataFrame summary is rendered from, collected from real pandas and polars frames.

These tests assert facts (the records of ``nbagent.context._facts``), never rendered text: rendering
is tested from hand-written facts in ``test_context_dataframe.py``. dtype names are asserted only where
pandas 2 and 3 (and polars 1 and 2) agree on them.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import orjson
import pandas as pd
import polars as pl
import pytest

from nbagent.context import dataframe
from nbagent.context._collect import collect
from nbagent.context._facts import SAMPLE_ROWS, ColumnFacts, FrameFacts
from nbagent.context._stats import Failure, exact_stats, sampled_stats, select_stats
from nbagent.context._text import format_number

LIBRARIES = ["pandas", "polars"]


def facts(frame: Any, *, rows: int = 5, schema_only: bool = False) -> FrameFacts:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning escaping the collection would reach the user's cell
        return collect(frame, rows=rows, schema_only=schema_only)


def stats(name: str, dtype: str, non_null: int, nulls: int, distinct: int | None, **more: Any) -> ColumnFacts:
    return ColumnFacts(name, dtype, True, non_null, nulls, distinct, **more)


def untyped(column: ColumnFacts) -> ColumnFacts:
    """The column with its dtype name blanked, for dtypes whose names differ across versions."""
    return dataclasses.replace(column, dtype="")


@pytest.mark.parametrize("library", LIBRARIES)
def test_numbers_nulls_distinct_samples_and_head_of_a_small_frame(library: str) -> None:
    if library == "pandas":
        frame: Any = pd.DataFrame(
            {"n": pd.array([3, 1, None, 2], dtype="Int64"), "x": [0.5, np.nan, 1.5, 2.5]}
        )
        float_dtype = "float64"
    else:
        frame = pl.DataFrame({"n": [3, 1, None, 2], "x": [0.5, None, 1.5, 2.5]})
        float_dtype = "Float64"
    result = facts(frame, rows=2)
    assert dataclasses.replace(result, memory=None) == FrameFacts(
        library=library,
        type_name=f"{library}.DataFrame",
        n_rows=4,
        columns=(
            stats(
                "n",
                "Int64",
                3,
                1,
                3,
                numbers=(("min", "1"), ("max", "3"), ("mean", "2"), ("std", "1")),
                samples=("3", "1", "2"),
            ),
            stats(
                "x",
                float_dtype,
                3,
                1,
                3,
                numbers=(("min", "0.5"), ("max", "2.5"), ("mean", "1.5"), ("std", "1")),
                samples=("0.5", "1.5", "2.5"),
            ),
        ),
        index="RangeIndex(start=0, stop=4, step=1)" if library == "pandas" else None,
        head_header=("n", "x"),
        head_rows=(("3", "0.5"), ("1", "null")),
    )
    assert result.memory is not None and result.memory.endswith(" B")


def test_infinities_leave_the_mean_and_std_to_the_finite_values_and_are_counted() -> None:
    inf = float("inf")
    pandas = facts(pd.DataFrame({"f": [1.0, np.nan, inf, -inf, 3.0], "all_inf": [inf] * 5}))
    polars = facts(pl.DataFrame({"f": [1.0, float("nan"), inf, -inf, 3.0, None], "all_inf": [inf] * 6}))
    finite = (("finite mean", "2"), ("finite std", "1.41421"))
    assert pandas.columns == (
        stats(
            "f",
            "float64",
            4,
            1,
            4,
            numbers=(("min", "-inf"), ("max", "inf"), *finite, ("infinite", "2")),
            samples=("1", "inf", "-inf"),
        ),
        stats(
            "all_inf",
            "float64",
            5,
            0,
            1,
            numbers=(("min", "inf"), ("max", "inf"), ("infinite", "5")),
            samples=("inf",),
        ),
    )
    # polars' NaN is a value, not a null: counted apart, and left out of the mean like the infinities.
    assert polars.columns == (
        stats(
            "f",
            "Float64",
            5,
            1,
            5,
            numbers=(("min", "-inf"), ("max", "inf"), *finite, ("infinite", "2"), ("NaN", "1")),
            samples=("1", "nan", "inf"),
        ),
        stats(
            "all_inf",
            "Float64",
            6,
            0,
            1,
            numbers=(("min", "inf"), ("max", "inf"), ("infinite", "6")),
            samples=("inf",),
        ),
    )


def test_a_list_column_is_described_as_lists_with_its_non_null_count_and_nothing_unavailable() -> None:
    lists = [[1, 2], [3], None, [1, 2]]
    held = "lists of int, length 1–2"
    (pandas,) = facts(pd.DataFrame({"l": lists})).columns
    assert pandas == stats("l", "object", 3, 1, None, samples=("[1, 2]", "[3]"), nested=held)
    (polars,) = facts(pl.DataFrame({"l": lists})).columns
    assert polars == stats("l", "List(Int64)", 3, 1, None, samples=("[1, 2]", "[3]"), nested=held)


def test_a_column_whose_values_break_hashing_and_printing_keeps_its_counts() -> None:
    class Unruly:
        def __hash__(self) -> int:
            raise RuntimeError("no hashing here")

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparing here")

        def __repr__(self) -> str:
            raise RuntimeError("no printing here")

    frame = pd.DataFrame({"good": [1, 2, 3], "bad": pd.Series([Unruly(), Unruly(), None], dtype=object)})
    result = facts(frame)
    assert result.columns[1] == stats(
        "bad",
        "object",
        2,
        1,
        None,
        unavailable=(
            ("distinct", "RuntimeError: no hashing here"),
            ("samples", "RuntimeError: no printing here"),
        ),
    )
    assert result.columns[0].numbers[:2] == (("min", "1"), ("max", "3"))
    assert [row[1] for row in result.head_rows] == ["unavailable", "unavailable", "null"]


@pytest.mark.parametrize("library", LIBRARIES)
def test_top_values_for_categoricals_booleans_and_repeating_text_ties_ordered_by_value(library: str) -> None:
    colours = ["red", "green", "red", "blue", None, "red", "green", "red"]
    flags = [True, False, True, None, True, False, True, True]
    words = ["b", "a", "b", "a", "c", "b", "a", None]
    if library == "pandas":
        frame: Any = pd.DataFrame(
            {
                "colour": pd.Categorical(colours, categories=["red", "green", "blue", "unused"]),
                "flag": pd.array(flags, dtype="boolean"),
                "word": pd.Series(words, dtype=object),
            }
        )
    else:
        frame = pl.DataFrame(
            {"colour": pl.Series(colours, dtype=pl.Categorical), "flag": flags, "word": words}
        )
    colour, flag, word = (untyped(c) for c in facts(frame).columns)
    assert colour == stats(
        "colour",
        "",
        7,
        1,
        3,
        top=(('"red"', 4), ('"green"', 2), ('"blue"', 1)),
        samples=('"red"', '"green"', '"blue"'),
    )
    assert flag == stats("flag", "", 7, 1, 2, top=(("true", 5), ("false", 2)), samples=("true", "false"))
    assert word == stats(
        "word", "", 7, 1, 3, top=(('"a"', 3), ('"b"', 3), ('"c"', 1)), samples=('"b"', '"a"', '"c"')
    )


def test_mixed_python_objects_get_counts_top_values_and_samples() -> None:
    (mixed,) = facts(pd.DataFrame({"m": pd.Series([1, "a", 2.5, None, "a"], dtype=object)})).columns
    assert mixed == stats(
        "m", "object", 4, 1, 3, top=(('"a"', 2), ("1", 1), ("2.5", 1)), samples=("1", '"a"', "2.5")
    )


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_long_frame_has_exact_extremes_nulls_and_mean_and_samples_the_costly_statistics(
    library: str,
) -> None:
    n = 1_000_000
    values = np.arange(n, dtype="float64")
    values[::7] = np.nan
    values[777_778] = -5.0  # extremes on single rows a 10% sample would likely miss
    values[3] = 1e9
    frame: Any = (
        pd.DataFrame({"v": values}) if library == "pandas" else pl.DataFrame({"v": values}).fill_nan(None)
    )
    result = facts(frame)
    (column,) = result.columns
    assert (column.nulls, column.non_null) == (142_858, n - 142_858)
    assert column.numbers == (
        ("min", "-5"),
        ("max", "1e+09"),
        ("mean", format_number(np.nanmean(values))),
        ("std", format_number(np.nanstd(values, ddof=1))),
    )
    assert result.sampled_rows == SAMPLE_ROWS
    assert column.distinct is not None and 80_000 < column.distinct <= SAMPLE_ROWS
    assert result.head_rows[0] == ("null",) and result.head_rows[3] == ("1e+09",)
    assert facts(frame) == result, "the sample's seed is fixed"


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_500_column_frame_keeps_every_name_and_dtype_and_has_statistics_for_its_edges(library: str) -> None:
    data = {f"c{i}": [i, i + 1, i + 2] if i % 2 else [0.5, 1.5, 2.5] for i in range(500)}
    frame: Any = pd.DataFrame(data) if library == "pandas" else pl.DataFrame(data)
    result = facts(frame)
    assert result.wide and result.n_cols == 500
    assert [c.name for c in result.columns] == list(data)
    assert [c.dtype.lower() for c in result.columns] == ["int64" if i % 2 else "float64" for i in range(500)]
    assert [i for i, c in enumerate(result.columns) if c.has_stats] == [*range(10), *range(495, 500)]
    assert result.columns[499] == stats(
        "c499",
        result.columns[499].dtype,
        3,
        0,
        3,
        numbers=(("min", "499"), ("max", "501"), ("mean", "500"), ("std", "1")),
        samples=("499", "500", "501"),
    )
    assert len(result.head_header) == 16 and result.head_header[10] == "…"


@pytest.mark.parametrize("library", LIBRARIES)
def test_schema_only_collects_names_and_dtypes_and_nothing_else(library: str) -> None:
    data = {"a": [1, 2], "b": ["x", "y"]}
    frame: Any = pd.DataFrame(data) if library == "pandas" else pl.DataFrame(data)
    result = facts(frame, schema_only=True)
    assert result.schema_only and result.n_rows == 2
    assert [(c.name, c.has_stats, c.non_null) for c in result.columns] == [
        ("a", False, None),
        ("b", False, None),
    ]
    assert (result.head_rows, result.memory) == ((), None)


def test_a_lazy_frame_gives_its_schema_without_running_its_query() -> None:
    calls: list[int] = []

    def spy(x: int) -> int:
        calls.append(x)
        return x

    lazy = pl.LazyFrame({"a": [1, 2]}).with_columns(b=pl.col("a").map_elements(spy, return_dtype=pl.Int64))
    result = facts(lazy)
    assert result == FrameFacts(
        library="polars",
        type_name="polars.LazyFrame",
        n_rows=None,
        columns=(ColumnFacts("a", "Int64"), ColumnFacts("b", "Int64")),
        schema_only=True,
        lazy=True,
        lazy_note=result.lazy_note,
        notes=result.notes,
    )
    assert "`it.collect()`" in (result.lazy_note or "")
    assert result.notes[0] == "plan (not optimised, not run):"
    assert calls == []


def test_multiindex_rows_and_columns_are_described_and_shown() -> None:
    index = pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["k1", "k2"])
    columns = pd.MultiIndex.from_tuples([("x", "mean"), ("x", "max")])
    result = facts(pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], index=index, columns=columns))
    assert result.index == "MultiIndex, 2 levels, names ['k1', 'k2']"
    assert [c.name for c in result.columns] == ["('x', 'mean')", "('x', 'max')"]
    assert result.head_header == ("(index)", "('x', 'mean')", "('x', 'max')")
    assert result.head_rows == (("('a', 1)", "1", "2"), ("('b', 2)", "3", "4"))


def test_a_named_index_is_shown_in_the_head() -> None:
    result = facts(pd.DataFrame({"v": [1, 2]}, index=pd.Index(["a", "b"], name="key")))
    assert result.index is not None and result.index.startswith("Index, name key, dtype ")
    assert (result.head_header, result.head_rows) == (("key", "v"), (("a", "1"), ("b", "2")))


def test_surrogate_bytes_duplicate_and_numeric_column_names_become_storable_text() -> None:
    frame = pd.DataFrame([[1, 2, 3, 4, 5]], columns=["\udcff", b"\xff", 0, "x", "x"])
    result = facts(frame)
    assert [c.name for c in result.columns] == ["\\udcff", "b'\\xff'", "0", "x", "x"]
    assert all(c.non_null == 1 for c in result.columns)
    message = dataframe(frame, name="bad\udcffname")
    orjson.dumps({"text": message.plain_text, "source": dict(message.source)})  # stored as UTF-8 JSON


@pytest.mark.parametrize("library", LIBRARIES)
def test_huge_integers_are_shown_in_full(library: str) -> None:
    top = 2**64 - 1
    frame: Any = (
        pd.DataFrame({"u": pd.Series([top, 0], dtype="uint64")})
        if library == "pandas"
        else pl.DataFrame({"u": pl.Series([top, 0], dtype=pl.UInt64)})
    )
    (column,) = facts(frame).columns
    assert column.numbers[:3] == (("min", "0"), ("max", "18446744073709551615"), ("mean", "9.22337e+18"))


def test_python_integers_beyond_64_bits_are_sampled_in_full() -> None:
    big = 10**30
    (column,) = facts(pd.DataFrame({"big": pd.Series([big, -big, None], dtype=object)})).columns
    assert column == stats("big", "object", 2, 1, 2, samples=(str(big), str(-big)))


@pytest.mark.parametrize("library", LIBRARIES)
def test_all_null_columns_of_every_dtype_say_so(library: str) -> None:
    if library == "pandas":
        frame: Any = pd.DataFrame(
            {
                "f": [np.nan] * 3,
                "o": pd.Series([None] * 3, dtype=object),
                "i": pd.array([None] * 3, dtype="Int64"),
                "t": pd.Series([pd.NaT] * 3, dtype="datetime64[ns]"),
            }
        )
    else:
        frame = pl.DataFrame(
            {
                "n": [None] * 3,
                "i": pl.Series([None] * 3, dtype=pl.Int64),
                "s": pl.Series([None] * 3, dtype=pl.String),
            }
        )
    result = facts(frame)
    assert [untyped(c) for c in result.columns] == [stats(c.name, "", 0, 3, 0) for c in result.columns]


def test_series_are_one_column_frames() -> None:
    assert [c.name for c in facts(pd.Series([1, 2])).columns] == ["0"]
    named = facts(pl.Series("p", ["a", "b"]))
    assert (named.type_name, [c.name for c in named.columns]) == ("polars.Series", ["p"])


def test_a_long_pandas_frame_of_python_objects_estimates_its_memory() -> None:
    frame = pd.DataFrame({"s": pd.Series([f"row {i}" for i in range(SAMPLE_ROWS + 1)], dtype=object)})
    memory = facts(frame).memory
    assert memory is not None and memory.startswith("≈ ") and memory.endswith("MB")


class CountingFrame:
    """A narwhals frame that counts the ``select`` calls made on it."""

    def __init__(self, frame: Any) -> None:
        self.frame, self.selects = frame, 0

    def select(self, *args: Any, **kwargs: Any) -> Any:
        self.selects += 1
        return self.frame.select(*args, **kwargs)


def _plans(frame: Any) -> dict[str, Any]:
    return {key: {**exact_stats(frame.schema[key]), **sampled_stats(False)} for key in frame.columns}


def test_statistics_of_a_frame_are_one_select() -> None:
    frame = CountingFrame(
        nw.from_native(pd.DataFrame({"n": [1, 2, 4], "t": ["a", "b", "a"]}), eager_only=True)
    )
    result = select_stats(frame, _plans(frame.frame))
    assert frame.selects == 1
    assert result == {
        "n": {
            "nulls": 0,
            "min": 1,
            "max": 4,
            "mean": pytest.approx(7 / 3),
            "std": pytest.approx(math.sqrt(7 / 3)),
            "distinct": 3,
        },
        "t": {"nulls": 0, "distinct": 2},
    }


def test_a_failing_statistic_falls_back_to_its_column_then_to_itself() -> None:
    native = pd.DataFrame({"n": [1, 2, 4], "l": [[1], [2], None]})
    frame = CountingFrame(nw.from_native(native, eager_only=True))
    result = select_stats(frame, _plans(frame.frame))
    # the frame's select, then one per column ("n" succeeds), then one per statistic of "l"
    assert frame.selects == 1 + 2 + 2
    assert result["n"]["max"] == 4 and result["n"]["distinct"] == 3
    assert result["l"] == {"nulls": 1, "distinct": Failure("TypeError: unhashable type: 'list'")}
