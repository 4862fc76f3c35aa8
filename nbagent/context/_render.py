"""Frame facts rendered as a framed text, degraded step by step until it fits a token budget.

Rendering is a pure function of the facts (``_facts``), so it is tested from hand-written facts.
Data reaches the text as written: only a ``</dataframe`` inside it is guarded (``<\\/dataframe``), and
line breaks and other control characters are shown as escapes so every name and value stays on its line.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nbagent.context._facts import SAMPLE_SEED, WIDE_FIRST, WIDE_LAST, ColumnFacts, FrameFacts
from nbagent.context._text import ELLIPSIS, clip, escape_attr, estimate_tokens
from nbagent.context._text import escape as _escape

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
GROUPING_GAIN = 0.9
"""Names are grouped by dtype when that takes at most this share of the in-order listing's tokens."""

TAG = "dataframe"
_PLAIN_NAME = re.compile(r"[\w.\-/()#%$@+]+(?: [\w.\-/()#%$@+]+)*")
_CLOSE = f"</{TAG}>"
_CUT_NOTE = f"{ELLIPSIS} summary cut to fit the token budget"
_AS_TABLE = "a frame this small is sent as a table, without statistics"


@dataclass(frozen=True)
class Meta:
    """What the caller says about the capture, as opposed to what the frame says about itself."""

    name: str | None
    captured_at: datetime
    cell: Mapping[str, Any] | None


def escape(text: str) -> str:
    return _escape(text, TAG)


def render_within(facts: FrameFacts, meta: Meta, budget_tokens: int) -> tuple[str, list[str]]:
    """The summary text and the degradation steps it took to fit ``budget_tokens``, in order (see
    :func:`render_fitted`)."""
    fitted = render_fitted(facts, meta, budget_tokens)
    return fitted.text, fitted.dropped


def render_fitted(facts: FrameFacts, meta: Meta, budget_tokens: int) -> Fitted:
    """The summary within ``budget_tokens``: its text, the degradation steps it took, in order, and
    how many head rows and middle column names came back after them.

    Steps are applied in ``DEGRADATION_ORDER`` until the text fits. Then, latest first, each earlier
    step is undone again if the text still fits without it (dropping the middle column names can make
    the edge columns' statistics affordable again), so every recorded step was needed. Last, when the
    middle columns were dropped, as many of their names as fit come back, in order, and when the head
    was dropped, as many of its rows as fit.
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
            return Fitted(_cut(text, facts, meta, budget_tokens), [*dropped, "cut"])
    while True:  # each undo also shortens the "omitted" note, so retry the others after one succeeds
        for step in reversed(dropped):
            kept = [s for s in dropped if s != step]
            candidate = render(facts, meta, kept)
            if estimate_tokens(candidate) <= budget_tokens:
                dropped, text = kept, candidate
                break
        else:
            break
    return fill(facts, meta, dropped, budget_tokens, text)


@dataclass(frozen=True)
class Fitted:
    """A summary within its budget: the text, the steps it took, and what came back after them."""

    text: str
    dropped: list[str]
    middle_names: int = 0
    head_rows: int = 0
    """Head rows shown when the ``head`` step was taken (as many as fit; 0 when none did)."""


def fill(facts: FrameFacts, meta: Meta, dropped: list[str], budget_tokens: int, text: str) -> Fitted:
    """After the steps: as many middle column names as fit come back (in order), then as many head
    rows as fit."""
    names = rows = 0
    if "middle-columns" in dropped:
        names, text = _most(
            lambda k: render(facts, meta, dropped, middle_names=k),
            max(len(facts.columns) - WIDE_FIRST - WIDE_LAST - 1, 0),
            budget_tokens,
            text,
        )
    if "head" in dropped and facts.head_rows:
        rows, text = _most(
            lambda k: render(facts, meta, dropped, middle_names=names, head_rows=k),
            len(facts.head_rows) - 1,
            budget_tokens,
            text,
        )
    return Fitted(text, dropped, names, rows)


def _most(make: Callable[[int], str], high: int, budget_tokens: int, text: str) -> tuple[int, str]:
    """The largest count up to ``high`` whose text (growing with the count) fits, ``(0, text)`` at least."""
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        candidate = make(mid)
        if estimate_tokens(candidate) <= budget_tokens:
            low, text = mid, candidate
        else:
            high = mid - 1
    return low, text


def render(
    facts: FrameFacts, meta: Meta, dropped: list[str], *, middle_names: int = 0, head_rows: int = 0
) -> str:
    """The framed summary with the named degradation steps applied; ``middle_names`` is how many
    middle column names the ``middle-columns`` step keeps (the rest are counted per dtype), and
    ``head_rows`` how many head rows the ``head`` step keeps."""
    if facts.whole:
        return render_whole(facts, meta)
    lines = [_open_tag(facts, meta)]
    if facts.index is not None:
        lines.append(f"index: {escape(facts.index)}")
    lines.append(_statistics_note(facts))
    lines.extend(escape(note) for note in facts.notes)
    lines.append(f"columns ({facts.n_cols:,}):")
    lines.extend(_column_lines(facts, dropped, middle_names))
    rows = facts.head_rows if "head" not in dropped else facts.head_rows[:head_rows]
    if facts.head_header and rows:
        cut = "" if len(rows) == len(facts.head_rows) else f"; {len(facts.head_rows):,} asked for"
        lines.append(f"head (first {len(rows):,} of {_rows(facts)} rows{cut}):")
        lines.append(_table_row(facts.head_header))
        lines.extend(_table_row(row) for row in rows)
    if facts.memory is not None:
        lines.append(f"memory: {escape(facts.memory)}")
    if dropped:
        lines.append("omitted to fit the token budget: " + ", ".join(dropped))
    lines.append(_CLOSE)
    return "\n".join(lines)


def render_whole(
    facts: FrameFacts, meta: Meta, *, columns: int | None = None, rows: int | None = None, names: bool = True
) -> str:
    """A small frame as it is: its rows as a table, then each column's dtype. ``columns`` and
    ``rows`` keep only the first so many (the text says so); without ``names`` the columns left out
    of the table are counted per dtype instead of listed."""
    n_cols = facts.n_cols
    shown_cols = n_cols if columns is None else min(columns, n_cols)
    table_rows = facts.head_rows if rows is None else facts.head_rows[:rows]
    lines = [_open_tag(facts, meta)]
    if facts.index is not None:
        lines.append(f"index: {escape(facts.index)}")
    if n_cols == 0:
        lines.append(f"no columns: {_rows(facts)} rows, nothing in them" + (":" if facts.head_header else ""))
    else:
        whole_rows = len(table_rows) == len(facts.head_rows)
        which = (
            f"all {_rows(facts)} rows"
            if whole_rows
            else f"the first {len(table_rows):,} of {_rows(facts)} rows"
        )
        note = "a frame this small is sent whole, without statistics"
        if shown_cols < n_cols or not whole_rows:
            which += f" and the first {shown_cols:,} of {n_cols:,} columns" if shown_cols < n_cols else ""
            note = "the rest did not fit the token budget; " + _AS_TABLE
        lines.append(f"{which} ({note}):")
    index_cols = len(facts.head_header) - n_cols  # an index column leads the header when shown
    keep = index_cols + shown_cols
    if facts.head_header:
        lines.append(_table_row(facts.head_header[:keep]))
        lines.extend(_table_row(row[:keep]) for row in table_rows)
    if n_cols:
        lines.append(f"columns ({n_cols:,}):")
    if names or shown_cols == n_cols:
        lines.extend(_name_lines(list(facts.columns)))
    else:
        lines.extend(_name_lines(list(facts.columns[:shown_cols])))
        hidden: dict[str, int] = {}
        for col in facts.columns[shown_cols:]:
            hidden[col.dtype] = hidden.get(col.dtype, 0) + 1
        lines.append(_tally_line(hidden))
    lines.append(_CLOSE)
    return "\n".join(lines)


def fit_whole(facts: FrameFacts, meta: Meta, budget_tokens: int) -> tuple[str, list[str], int, int]:
    """A small frame's table within ``budget_tokens``: all of it when it fits, else all its rows and
    as many leading columns as fit (every column still named, or counted per dtype when the names do
    not fit), else as many rows of its first column as fit. Returns the text, the steps taken
    (``table-columns``, ``column-names``, ``table-rows``, ``cut``), and the columns and rows shown."""
    n_cols, n_rows = facts.n_cols, len(facts.head_rows)
    text = render_whole(facts, meta)
    if estimate_tokens(text) <= budget_tokens:
        return text, [], n_cols, n_rows
    for names in (True, False):
        steps = ["table-columns"] + ([] if names else ["column-names"])

        def whole(k: int, n: bool = names) -> str:
            return render_whole(facts, meta, columns=k, names=n)

        k, text = _most(whole, n_cols - 1, budget_tokens, "")
        if k >= 1:
            return text, steps, k, n_rows
    r, text = _most(
        lambda r: render_whole(facts, meta, columns=1, rows=r, names=False), n_rows - 1, budget_tokens, ""
    )
    if r >= 1:
        return text, ["table-columns", "column-names", "table-rows"], min(1, n_cols), r
    full = render_whole(facts, meta, columns=0, rows=0, names=False)
    return (
        _cut(full, facts, meta, budget_tokens),
        ["table-columns", "column-names", "table-rows", "cut"],
        0,
        0,
    )


def _rows(facts: FrameFacts) -> str:
    return "?" if facts.n_rows is None else f"{facts.n_rows:,}"


def _open_tag(facts: FrameFacts, meta: Meta, *, minimal: bool = False, name_chars: int = NAME_CHARS) -> str:
    attrs: list[tuple[str, str]] = []
    if meta.name is not None:
        attrs.append(("name", clip(meta.name, name_chars)))
    attrs.append(("library", facts.library))
    if not minimal:
        attrs.append(("type", facts.type_name))
    rows = "?" if facts.n_rows is None else str(facts.n_rows)
    attrs.append(("shape", f"{rows} x {facts.n_cols}"))
    if not minimal:
        attrs.append(("captured", meta.captured_at.isoformat(timespec="seconds")))
        if meta.cell:
            attrs.append(("cell", _cell_label(meta.cell)))
    return f"<{TAG} " + " ".join(f'{k}="{escape_attr(v, TAG)}"' for k, v in attrs) + ">"


def _cell_label(cell: Mapping[str, Any]) -> str:
    parts = []
    if cell.get("execution_count") is not None:
        parts.append(f"[{cell['execution_count']}]")
    if cell.get("cell_id"):
        parts.append(f"id {clip(str(cell['cell_id']), 40)}")
    return " ".join(parts)


def _statistics_note(facts: FrameFacts) -> str:
    if facts.lazy:
        return escape(facts.lazy_note or "lazy frame: schema only; no rows were read")
    if facts.schema_only:
        return "schema only: no statistics or rows were computed"
    if facts.sampled_rows is None:
        note = f"statistics: exact over all {_rows(facts)} rows"
    else:
        note = (
            f"statistics: null counts, min, max, mean, std and the value counts of categories exact over "
            f'all {_rows(facts)} rows; other distinct counts (marked "in sample"), top values (counts '
            f"marked ≈, scaled to all rows) and samples from a fixed-seed sample of {facts.sampled_rows:,} "
            f"rows (seed {SAMPLE_SEED})"
        )
    if facts.wide:
        note += f"; full statistics for the first {WIDE_FIRST} and last {WIDE_LAST} columns only"
    return note


def _column_lines(facts: FrameFacts, dropped: list[str], middle_names: int) -> list[str]:
    """One line per column with statistics; columns without them are listed by name and dtype
    (``_name_lines``); columns the ``middle-columns`` step hides are counted per dtype."""
    columns = facts.columns
    n = len(columns)
    edges = set(range(min(WIDE_FIRST, n))) | set(range(max(n - WIDE_LAST, 0), n))
    middle = [i for i in range(n) if i not in edges]
    shown = edges | set(middle[:middle_names] if "middle-columns" in dropped else middle)
    with_stats = [i for i, c in enumerate(columns) if c.has_stats or c.error]
    keep_stats = set(with_stats[:KEEP_FIRST] + with_stats[len(with_stats) - KEEP_LAST :])
    lines: list[str] = []
    names: list[ColumnFacts] = []  # consecutive columns shown by name and dtype only
    hidden: dict[str, int] = {}  # dtype -> count of consecutive hidden columns
    for i, col in enumerate(columns):
        if i not in shown:
            lines.extend(_name_lines(names))
            names = []
            hidden[col.dtype] = hidden.get(col.dtype, 0) + 1
            continue
        if hidden:
            lines.append(_tally_line(hidden))
            hidden = {}
        if not (col.has_stats or col.error):
            names.append(col)
            continue
        lines.extend(_name_lines(names))
        names = []
        if "stats" in dropped or ("middle-stats" in dropped and i not in keep_stats):
            lines.append(_brief_line(col, facts.n_rows))
        else:
            lines.append(_full_line(col, facts.n_rows, dropped))
    lines.extend(_name_lines(names))
    if hidden:
        lines.append(_tally_line(hidden))
    return lines


def _name_lines(columns: list[ColumnFacts]) -> list[str]:
    """Columns by name and dtype: in order, runs of one dtype sharing a line (``- a, b: int64``), or,
    when that is clearly longer, one line per dtype (``- dtype int64 ×2: a, b``)."""
    if not columns:
        return []
    runs: list[list[ColumnFacts]] = []
    for col in columns:
        if runs and runs[-1][0].dtype == col.dtype:
            runs[-1].append(col)
        else:
            runs.append([col])
    in_order = ["- " + ", ".join(_name(c.name) for c in run) + f": {escape(run[0].dtype)}" for run in runs]
    if len(runs) <= 2:
        return in_order
    groups: dict[str, list[str]] = {}
    for col in columns:
        groups.setdefault(col.dtype, []).append(_name(col.name))
    grouped = [f"- dtype {escape(dtype)} ×{len(ns):,}: " + ", ".join(ns) for dtype, ns in groups.items()]
    if estimate_tokens("\n".join(grouped)) <= GROUPING_GAIN * estimate_tokens("\n".join(in_order)):
        return grouped
    return in_order


def _tally_line(hidden: dict[str, int]) -> str:
    total = sum(hidden.values())
    counts = ", ".join(f"{escape(dtype)} ×{count:,}" for dtype, count in hidden.items())
    return f"- {ELLIPSIS} {total:,} more columns: {counts}"


def _brief_line(col: ColumnFacts, n_rows: int | None) -> str:
    line = f"- {_name(col.name)}: {escape(col.dtype)}"
    if col.nulls and n_rows:
        line += f" · {_percent(col.nulls, n_rows)} null"
    return line


def _full_line(col: ColumnFacts, n_rows: int | None, dropped: list[str]) -> str:
    parts = [f"- {_name(col.name)}: {escape(col.dtype)}"]
    rows = n_rows or 0
    if col.error is not None:
        parts.append(f"unavailable ({escape(col.error)})")
    elif col.has_stats and rows == 0:
        parts.append("no rows")
    elif col.has_stats and col.non_null == 0:
        parts.append(f"all null ({rows:,})")
    elif col.has_stats:
        parts.append(f"non-null {col.non_null or 0:,} ({_percent(col.nulls or 0, rows)} null)")
        if col.distinct is not None:
            parts.append(f"distinct {col.distinct:,}" + (" in sample" if col.distinct_sampled else ""))
        if col.nested is not None:
            parts.append(escape(col.nested))
        parts.extend(f"{label} {escape(value)}" for label, value in col.numbers)
        if col.top and "top-values" not in dropped:
            mark = "≈" if col.top_scaled else ""
            parts.append("top " + ", ".join(f"{escape(v)} {mark}{c:,}" for v, c in col.top))
        if col.samples and "samples" not in dropped:
            parts.append("samples " + ", ".join(escape(s) for s in col.samples))
        parts.extend(_unavailable(col, dropped))
    return " · ".join(parts)


def _unavailable(col: ColumnFacts, dropped: list[str]) -> list[str]:
    """``distinct unavailable (TypeError: …)``; statistics failing for one reason share a part."""
    skip = {"samples"} if "samples" in dropped else set()
    if "top-values" in dropped:
        skip.add("top")
    groups: list[tuple[list[str], str]] = []
    for stat, reason in col.unavailable:
        if stat in skip:
            continue
        if groups and groups[-1][1] == reason:
            groups[-1][0].append(stat)
        else:
            groups.append(([stat], reason))
    return [f"{', '.join(stats)} unavailable ({escape(reason)})" for stats, reason in groups]


@functools.lru_cache(maxsize=65_536)
def _name(name: str) -> str:
    """A column name as data: bare when plain, JSON-quoted otherwise, its close guarded."""
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
