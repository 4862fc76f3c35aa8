"""A frame's facts with the values of some columns (a ``password`` column) replaced by a mark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from nbagent.context._facts import ColumnFacts, FrameFacts


def masked(facts: FrameFacts, hidden: Callable[[str], bool] | None, mark: str) -> FrameFacts:
    """``facts`` with every value of the columns ``hidden`` picks shown as ``mark``: their head cells,
    samples, top values and figures. Names, types and counts stay."""
    if hidden is None or not any(hidden(c.name) for c in facts.columns):
        return facts
    columns = tuple(_masked_column(c, mark) if hidden(c.name) else c for c in facts.columns)
    places = [i for i, name in enumerate(facts.head_header) if hidden(name)]
    rows = tuple(
        tuple(mark if i in places else cell for i, cell in enumerate(row)) for row in facts.head_rows
    )
    return replace(facts, columns=columns, head_rows=rows)


def _masked_column(column: ColumnFacts, mark: str) -> ColumnFacts:
    return replace(
        column,
        numbers=tuple((label, mark) for label, _ in column.numbers),
        top=((mark, column.non_null or 0),) if column.top else (),
        samples=(mark,) if column.samples else (),
    )
