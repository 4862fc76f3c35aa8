"""The DataFrame summary of SPEC §9.3: a frame of any library narwhals reads as a framed, budgeted
snapshot message; a lazy one described without running it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, cast

from nbagent.context import _lazy
from nbagent.context._collect import collect
from nbagent.context._masking import masked
from nbagent.context._native import is_lazy, native_kind
from nbagent.context._render import MIN_BUDGET_TOKENS, Meta, fit_whole, render, render_fitted
from nbagent.context._text import estimate_tokens, printable
from nbagent.log.messages import CellRef, DataFrameSource, UserMessage

WHOLE_ROWS = 50
"""Frames of at most this many rows are sent whole, as a table, when that fits the budget."""


def is_dataframe(obj: Any) -> bool:
    """True for the frames ``dataframe()`` summarises (subclasses included): DataFrames and Series
    of pandas, polars, modin and cuDF, pyarrow Tables and RecordBatches, and lazy frames (polars
    LazyFrames, Dask DataFrames and Series, DuckDB relations, Ibis tables).

    Nothing is imported to answer (``narwhals.dependencies`` is asked only once a frame library is
    loaded). A Series counts: ``dataframe()`` summarizes it as a one-column frame; a lazy frame by
    its schema and what it knows without running.
    """
    return native_kind(obj) is not None


def is_lazy_frame(obj: Any) -> bool:
    """True for a frame whose rows cost running a query or task graph (see ``is_dataframe``)."""
    kind = native_kind(obj)
    return kind is not None and is_lazy(*kind)


def frame_outline(obj: Any) -> tuple[int | None, list[str]] | None:
    """``(rows, column names)`` of a frame, read without running anything (rows None for a lazy
    frame, whose row count is unknown until it runs); None when ``obj`` is not a frame."""
    kind = native_kind(obj)
    if kind is None:
        return None
    library, shape = kind
    if is_lazy(library, shape):
        return None, _lazy.names_and_dtypes(obj, library, shape)[0]
    if shape == "Series":
        return len(obj), [str(obj.name)]
    columns = obj.schema.names if library == "pyarrow" else list(obj.columns)
    return (obj.num_rows if library == "pyarrow" else len(obj)), [str(c) for c in columns]


def dataframe(
    df: Any,
    *,
    name: str | None = None,
    rows: int = 5,
    schema_only: bool = False,
    budget_tokens: int = 1500,
    whole_rows: int = WHOLE_ROWS,
    cell: Mapping[str, Any] | None = None,
    captured_at: datetime | None = None,
    hidden_columns: Callable[[str], bool] | None = None,
    hidden_mark: str = "<hidden>",
) -> UserMessage:
    """Summarize a DataFrame or Series (see ``is_dataframe``; a lazy frame by its schema and what it
    knows, without running it) as a ``dataframe`` snapshot message (SPEC §9.3).

    The text is framed as ``<dataframe …>…</dataframe>``; names and values inside read as written
    (only a ``</dataframe`` in them is guarded). It is kept within ``budget_tokens`` (as counted by
    ``estimate_tokens``) by dropping detail in the fixed ``DEGRADATION_ORDER``; the steps taken are
    listed in ``source["truncated"]``. ``schema_only`` lists every column name and dtype that fits the
    budget and computes nothing else. A lazy frame is never run: its summary is its schema and what
    it knows (``_lazy``), ``source["lazy"]`` is True and its row count in ``source["shape"]`` None.

    A frame of at most ``whole_rows`` rows (``df.describe()``, a pivot) is sent as a table of its
    rows without statistics (``source["form"]`` is ``"table"``), never as statistics of its rows:
    when the whole table does not fit the budget, as many leading columns as fit (then rows);
    ``source["truncated"]`` then lists ``table-columns``, ``column-names``, ``table-rows`` or ``cut``
    as needed, and ``source["table"]`` says ``{"columns": [shown, total], "rows": [shown, total], "whole_tokens":
    n}``. When the head of a summary was cut to fit, ``source["head_rows"]`` is ``[asked, shown]``.

    The values of the columns whose names ``hidden_columns`` picks (a ``password`` column) are shown
    as ``hidden_mark`` (head cells, samples, top values, figures); their names, types and counts stay.
    """
    if budget_tokens < MIN_BUDGET_TOKENS:
        raise ValueError(f"budget_tokens={budget_tokens} is too small; pass at least {MIN_BUDGET_TOKENS}")
    if rows < 0:
        raise ValueError(f"rows={rows} must be zero (no head rows) or more")
    meta = Meta(name=name, captured_at=captured_at or datetime.now(timezone.utc), cell=cell)
    facts = masked(
        collect(df, rows=rows, schema_only=schema_only, whole_rows=whole_rows, name=name),
        hidden_columns,
        hidden_mark,
    )
    table: dict[str, Any] | None = None
    if facts.whole:
        text, truncated, shown_cols, shown_rows = fit_whole(facts, meta, budget_tokens)
        if truncated:
            table = {
                "columns": [shown_cols, facts.n_cols],
                "rows": [shown_rows, len(facts.head_rows)],
                "whole_tokens": estimate_tokens(render(facts, meta, [])),
            }
    else:
        fitted = render_fitted(facts, meta, budget_tokens)
        text, truncated = fitted.text, fitted.dropped
    source: DataFrameSource = {
        "kind": "dataframe",
        "name": None if name is None else printable(name),
        "library": facts.library,
        "shape": [facts.n_rows, facts.n_cols],
        "columns": [c.name for c in facts.columns],
        "truncated": truncated,
        "form": "table" if facts.whole else "snapshot",
    }
    if facts.lazy:
        source["lazy"] = True
    if table is not None:
        source["table"] = table
    if "head" in truncated and not facts.whole:
        source["head_rows"] = [len(facts.head_rows), fitted.head_rows]
    if cell is not None:
        source["cell"] = cast(CellRef, dict(cell))  # a cell's {execution_count, cell_id}
    return UserMessage.text(text, source=source)
