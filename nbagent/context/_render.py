"""Frame facts rendered as a framed, escaped text, degraded step by step until it fits a token budget."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nbagent.context._facts import SAMPLE_SEED, WIDE_FIRST, WIDE_LAST, ColumnFacts, FrameFacts
from nbagent.context._text import ELLIPSIS, clip, escape, escape_attr, estimate_tokens

DEGRADATION_ORDER: tuple[str, ...] = (
    "samples",
    "head",
    "top-values",
    "middle-stats",
    "stats",
    "middle-columns",
    "cut",
)
"""The fixed order in which detail is dropped to meet the token budget (see ``nbagent.context``)."""

KEEP_FIRST, KEEP_LAST = 3, 2
"""Columns that keep full statistics after the ``middle-stats`` step."""
NAME_CHARS = 80
MIN_BUDGET_TOKENS = 64
"""The smallest budget every frame's summary is guaranteed to fit."""

_PLAIN_NAME = re.compile(r"[\w.\-/()#%$@+]+(?: [\w.\-/()#%$@+]+)*")
_CLOSE = "</dataframe>"
_CUT_NOTE = f"{ELLIPSIS} summary cut to fit the token budget"


@dataclass(frozen=True)
class Meta:
    """What the caller says about the capture, as opposed to what the frame says about itself."""

    name: str | None
    captured_at: datetime
    cell: Mapping[str, Any] | None


def render_within(facts: FrameFacts, meta: Meta, budget_tokens: int) -> tuple[str, list[str]]:
    """The summary text and the degradation steps it took to fit ``budget_tokens``, in order.

    Steps are applied in ``DEGRADATION_ORDER`` until the text fits. Then, latest first, each earlier
    step is undone again if the text still fits without it (dropping the middle column names can make
    the edge columns' statistics affordable again), so every recorded step was needed.
    """
    dropped: list[str] = []
    text = render(facts, meta, dropped)
    for step in DEGRADATION_ORDER[:-1]:
        if estimate_tokens(text) <= budget_tokens:
            break
        candidate = render(facts, meta, [*dropped, step])
        if candidate != text:
            dropped.append(step)
            text = candidate
    else:
        if estimate_tokens(text) > budget_tokens:
            return _cut(text, facts, meta, budget_tokens), [*dropped, "cut"]
    while True:  # each undo also shortens the "omitted" note, so retry the others after one succeeds
        for step in reversed(dropped):
            kept = [s for s in dropped if s != step]
            candidate = render(facts, meta, kept)
            if estimate_tokens(candidate) <= budget_tokens:
                dropped, text = kept, candidate
                break
        else:
            return text, dropped


def render(facts: FrameFacts, meta: Meta, dropped: list[str]) -> str:
    """The framed summary with the named degradation steps applied."""
    lines = [_open_tag(facts, meta)]
    if facts.index is not None:
        lines.append(f"index: {escape(facts.index)}")
    if facts.schema_only:
        lines.append("schema only: no statistics or rows were computed")
    else:
        lines.append(_statistics_note(facts))
    lines.append(f"columns ({facts.n_cols:,}):")
    lines.extend(_column_lines(facts, dropped))
    if facts.head_header and "head" not in dropped:
        shown = len(facts.head_rows)
        lines.append(f"head (first {shown:,} of {facts.n_rows:,} rows):")
        lines.append(_table_row(facts.head_header))
        lines.extend(_table_row(row) for row in facts.head_rows)
    if facts.memory is not None:
        lines.append(f"memory: {escape(facts.memory)}")
    if dropped:
        lines.append("omitted to fit the token budget: " + ", ".join(dropped))
    lines.append(_CLOSE)
    return "\n".join(lines)


def _open_tag(facts: FrameFacts, meta: Meta, *, minimal: bool = False, name_chars: int = NAME_CHARS) -> str:
    attrs: list[tuple[str, str]] = []
    if meta.name is not None:
        attrs.append(("name", clip(meta.name, name_chars)))
    attrs.append(("library", facts.library))
    if not minimal:
        attrs.append(("type", facts.type_name))
    attrs.append(("shape", f"{facts.n_rows} x {facts.n_cols}"))
    if not minimal:
        attrs.append(("captured", meta.captured_at.isoformat(timespec="seconds")))
        if meta.cell:
            attrs.append(("cell", _cell_label(meta.cell)))
    return "<dataframe " + " ".join(f'{k}="{escape_attr(v)}"' for k, v in attrs) + ">"


def _cell_label(cell: Mapping[str, Any]) -> str:
    parts = []
    if cell.get("execution_count") is not None:
        parts.append(f"[{cell['execution_count']}]")
    if cell.get("cell_id"):
        parts.append(f"id {clip(str(cell['cell_id']), 40)}")
    return " ".join(parts)


def _statistics_note(facts: FrameFacts) -> str:
    if facts.sampled_rows is None:
        note = f"statistics: exact over all {facts.n_rows:,} rows"
    else:
        note = (
            f"statistics: distinct counts, min/max/mean/std, top values and samples from a fixed-seed "
            f"sample of {facts.sampled_rows:,} of {facts.n_rows:,} rows (seed {SAMPLE_SEED}); "
            "non-null counts exact"
        )
    if facts.wide:
        note += f"; full statistics for the first {WIDE_FIRST} and last {WIDE_LAST} columns only"
    return note


def _column_lines(facts: FrameFacts, dropped: list[str]) -> list[str]:
    """One line per column with statistics; runs of columns without them share a line per dtype."""
    columns = facts.columns
    n = len(columns)
    edges = set(range(WIDE_FIRST)) | set(range(n - WIDE_LAST, n))
    with_stats = [i for i, c in enumerate(columns) if c.has_stats or c.error]
    keep_stats = set(with_stats[:KEEP_FIRST] + with_stats[len(with_stats) - KEEP_LAST :])
    lines: list[str] = []
    run: list[ColumnFacts] = []  # consecutive columns shown by name and dtype only
    hidden: dict[str, int] = {}  # dtype -> count of middle columns collapsed to a tally
    for i, col in enumerate(columns):
        if "middle-columns" in dropped and i not in edges:
            hidden[col.dtype] = hidden.get(col.dtype, 0) + 1
            continue
        if hidden:
            lines.append(_tally_line(hidden))
            hidden = {}
        if not (col.has_stats or col.error):
            if run and run[-1].dtype != col.dtype:
                lines.append(_run_line(run))
                run = []
            run.append(col)
            continue
        if run:
            lines.append(_run_line(run))
            run = []
        if "stats" in dropped or ("middle-stats" in dropped and i not in keep_stats):
            lines.append(_brief_line(col, facts.n_rows))
        else:
            lines.append(_full_line(col, facts.n_rows, dropped))
    if run:
        lines.append(_run_line(run))
    if hidden:
        lines.append(_tally_line(hidden))
    return lines


def _run_line(run: list[ColumnFacts]) -> str:
    return "- " + ", ".join(_name(c.name) for c in run) + f": {escape(run[0].dtype)}"


def _tally_line(hidden: dict[str, int]) -> str:
    total = sum(hidden.values())
    counts = ", ".join(f"{escape(dtype)} ×{count:,}" for dtype, count in hidden.items())
    return f"- {ELLIPSIS} {total:,} more columns: {counts}"


def _brief_line(col: ColumnFacts, n_rows: int) -> str:
    line = f"- {_name(col.name)}: {escape(col.dtype)}"
    if col.nulls:
        line += f" · {_percent(col.nulls, n_rows)} null"
    return line


def _full_line(col: ColumnFacts, n_rows: int, dropped: list[str]) -> str:
    parts = [f"- {_name(col.name)}: {escape(col.dtype)}"]
    if col.error is not None:
        parts.append(f"unavailable ({escape(col.error)})")
    elif col.has_stats and n_rows == 0:
        parts.append("no rows")
    elif col.has_stats and col.non_null == 0:
        parts.append(f"all null ({n_rows:,})")
    elif col.has_stats:
        parts.append(f"non-null {col.non_null:,} ({_percent(col.nulls or 0, n_rows)} null)")
        parts.append(f"distinct {col.distinct:,}")
        parts.extend(f"{label} {escape(value)}" for label, value in col.numbers)
        if col.top and "top-values" not in dropped:
            parts.append("top " + ", ".join(f"{escape(v)} {c:,}" for v, c in col.top))
        if col.samples and "samples" not in dropped:
            parts.append("samples " + ", ".join(escape(s) for s in col.samples))
    return " · ".join(parts)


@functools.lru_cache(maxsize=65_536)
def _name(name: str) -> str:
    """A column name as data: bare when plain, JSON-quoted otherwise, always escaped."""
    shown = clip(name, NAME_CHARS)
    if not _PLAIN_NAME.fullmatch(shown):
        shown = json.dumps(shown, ensure_ascii=False)
    return escape(shown)


def _percent(part: int, whole: int) -> str:
    if whole == 0 or part == 0:
        return "0%"
    share = 100 * part / whole
    if share < 0.1:
        return "under 0.1%"
    return f"{share:.1f}%"


def _table_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(escape(c).replace("|", "\\|") for c in cells) + " |"


def _cut(text: str, facts: FrameFacts, meta: Meta, budget_tokens: int) -> str:
    """Last resort: keep the opening tag and as many leading lines as fit, then close the frame."""
    lines = text.split("\n")
    tail = [_CUT_NOTE, _CLOSE]
    kept = [lines[0]]
    for line in lines[1:-1]:
        if estimate_tokens("\n".join([*kept, line, *tail])) > budget_tokens:
            break
        kept.append(line)
    result = "\n".join([*kept, *tail])
    if estimate_tokens(result) <= budget_tokens:
        return result
    for name_chars in (NAME_CHARS, 20):
        result = "\n".join([_open_tag(facts, meta, minimal=True, name_chars=name_chars), *tail])
        if estimate_tokens(result) <= budget_tokens:
            return result
    return _open_tag(facts, meta, minimal=True, name_chars=8) + "\n" + _CLOSE
