"""The DataFrame summary of SPEC §9.3: a pandas or polars frame as a framed, budgeted snapshot message."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from nbagent.context._collect import collect
from nbagent.context._masking import masked
from nbagent.context._native import native_kind
from nbagent.context._render import MIN_BUDGET_TOKENS, Fitted, Meta, render, render_fitted
from nbagent.context._text import estimate_tokens, printable
from nbagent.core.messages import UserMessage

WHOLE_ROWS = 50
"""Frames of at most this many rows are sent whole, as a table, when that fits the budget."""


def is_dataframe(obj: Any) -> bool:
    """True for pandas and polars DataFrames and Series (and their subclasses) and polars LazyFrames.

    Nothing is imported to answer (``narwhals.dependencies`` is asked only once pandas or polars is
    loaded). A Series counts: ``dataframe()`` summarizes it as a one-column frame; a LazyFrame by
    its schema.
    """
    return native_kind(obj) is not None


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
    """Summarize a pandas or polars DataFrame (or Series, or a polars LazyFrame's schema) as a
    ``dataframe`` snapshot message (SPEC §9.3).

    The text is framed as ``<dataframe …>…</dataframe>``; names and values inside read as written
    (only a ``</dataframe`` in them is guarded). It is kept within ``budget_tokens`` (as counted by
    ``estimate_tokens``) by dropping detail in the fixed ``DEGRADATION_ORDER``; the steps taken are
    listed in ``source["truncated"]``. ``schema_only`` lists every column name and dtype that fits the
    budget and computes nothing else. A LazyFrame is never collected: its summary is its schema, and
    its row count in ``source["shape"]`` is None.

    A frame of at most ``whole_rows`` rows (``df.describe()``, a pivot) is sent whole, as a table of
    every row and column without statistics (``source["form"]`` is ``"table"``), when that fits the
    budget; otherwise it is summarized like any frame. When the head was cut to fit,
    ``source["head_rows"]`` is ``[asked, shown]``.

    The values of the columns whose names ``hidden_columns`` picks (a ``password`` column) are shown
    as ``hidden_mark`` (head cells, samples, top values, figures); their names, types and counts stay.
    """
    if budget_tokens < MIN_BUDGET_TOKENS:
        raise ValueError(f"budget_tokens={budget_tokens} is too small; pass at least {MIN_BUDGET_TOKENS}")
    if rows < 0:
        raise ValueError(f"rows={rows} must be zero (no head rows) or more")
    meta = Meta(name=name, captured_at=captured_at or datetime.now(timezone.utc), cell=cell)
    facts = masked(
        collect(df, rows=rows, schema_only=schema_only, whole_rows=whole_rows), hidden_columns, hidden_mark
    )
    if facts.whole:
        text = render(facts, meta, [])
        if estimate_tokens(text) > budget_tokens:
            facts = masked(collect(df, rows=rows, schema_only=schema_only), hidden_columns, hidden_mark)
    fitted = render_fitted(facts, meta, budget_tokens) if not facts.whole else Fitted(text, [])
    text, truncated = fitted.text, fitted.dropped
    source: dict[str, Any] = {
        "kind": "dataframe",
        "name": None if name is None else printable(name),
        "library": facts.library,
        "shape": [facts.n_rows, facts.n_cols],
        "columns": [c.name for c in facts.columns],
        "truncated": truncated,
        "form": "table" if facts.whole else "snapshot",
    }
    if "head" in truncated:
        source["head_rows"] = [len(facts.head_rows), fitted.head_rows]
    if cell is not None:
        source["cell"] = dict(cell)
    return UserMessage.text(text, source=source)
