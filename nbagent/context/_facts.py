"""What a DataFrame summary says, as plain records: computed once (``_collect``), rendered many times.

The records hold display-ready strings and counts, not yet escaped, and no library objects, so a
summary can be rendered (and tested) from hand-written facts alone.
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLE_ROWS = 100_000
"""Frames longer than this get their costly statistics from a fixed-seed sample of this many rows."""
SAMPLE_SEED = 0
"""The seed of that sample: the same frame always yields the same summary."""
WIDE_COLUMNS = 30
"""Frames with more columns than this get full statistics for their edge columns only."""
WIDE_FIRST, WIDE_LAST = 10, 5
"""How many leading and trailing columns of a wide frame get full statistics."""


@dataclass(frozen=True)
class ColumnFacts:
    """What the summary says about one column."""

    name: str
    """The column's name as text (non-string names through ``str``, lone surrogates as ``\\udcff``)."""
    dtype: str
    """The library's own name of the column's type (``int64``, ``Int64``, ``String``…)."""
    has_stats: bool = False
    """Whether statistics were computed (wide frames and schema-only summaries skip most columns)."""
    non_null: int | None = None
    """Non-null values over all rows."""
    nulls: int | None = None
    """Null values over all rows (pandas counts NaN as null, polars does not)."""
    distinct: int | None = None
    """Distinct non-null values (over the sample when the frame was sampled)."""
    numbers: tuple[tuple[str, str], ...] = ()
    """Labelled figures in display order: ``("min", "1")``, ``("mean", "2.5")``, ``("infinite", "3")``."""
    top: tuple[tuple[str, int], ...] = ()
    """The most frequent values (display text) with their counts, most frequent first."""
    samples: tuple[str, ...] = ()
    """Up to three distinct leading values as display text."""
    distinct_sampled: bool = False
    """Whether ``distinct`` was counted in the sample only (a lower bound for the whole frame)."""
    top_scaled: bool = False
    """Whether the ``top`` counts were counted in the sample and scaled to all rows (estimates)."""
    nested: str | None = None
    """For lists and structs: what they hold (``lists of str, length 1–3``), instead of distinct and top."""
    unavailable: tuple[tuple[str, str], ...] = ()
    """Statistics that failed, with why (``("distinct", "TypeError: unhashable type: 'list'")``)."""
    error: str | None = None
    """Set when even the null count failed: the column's statistics are all unavailable, for this reason."""


@dataclass(frozen=True)
class FrameFacts:
    """What the summary says about a whole frame."""

    library: str
    """``pandas``, ``polars``, ``pyarrow``, ``modin``, ``cudf``, ``dask``, ``duckdb`` or ``ibis``."""
    type_name: str
    """``pandas.DataFrame``-style: the top-level package and the class."""
    n_rows: int | None
    """Rows, or None for a lazy frame (counting them would run its query)."""
    columns: tuple[ColumnFacts, ...]
    index: str | None = None
    """A description of a pandas index; None for polars."""
    head_header: tuple[str, ...] = ()
    head_rows: tuple[tuple[str, ...], ...] = ()
    """The head's cells as display text, the header first (an index column and ``…`` included)."""
    memory: str | None = None
    """Memory use as display text (``≈ 12.3 MB`` when estimated)."""
    sampled_rows: int | None = None
    """Rows in the fixed-seed sample the costly statistics came from; None when they cover all rows."""
    wide: bool = False
    """Whether only the edge columns got statistics."""
    whole: bool = False
    """Whether ``head_rows`` are all the rows (a small frame sent whole, as a table, without statistics)."""
    schema_only: bool = False
    """Whether only names and dtypes were collected."""
    lazy: bool = False
    """Whether the frame is lazy (a polars LazyFrame, Dask, DuckDB, Ibis): schema only, nothing run."""
    lazy_note: str | None = None
    """For a lazy frame: that nothing was run, and how to get its rows summarised."""
    notes: tuple[str, ...] = ()
    """For a lazy frame: what else it knows without running (partitions, divisions, plan, SQL)."""

    @property
    def n_cols(self) -> int:
        return len(self.columns)
