"""What is known of a lazy frame without running it: its schema, its partitions, its plan or SQL.

Polars LazyFrames, Dask DataFrames and Series, DuckDB relations and Ibis tables hold a query (a task
graph) rather than rows: counting or reading their rows would run it, which may take minutes or read
a whole data lake. Everything here reads what the frame object already knows: column names and dtypes
(Dask's ``_meta``-backed ``dtypes``, DuckDB's bound ``types``, Ibis' ``schema()``, polars'
``collect_schema()``), Dask's partition count and divisions, a polars plan (``explain`` without
optimising) and the SQL of a DuckDB relation or a SQL-backed Ibis table (compiled, not run).
"""

from __future__ import annotations

import re
from typing import Any

from nbagent.context._text import clip, printable

_CHAIN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
"""An expression that takes ``.compute()`` as it is (``ddf``, ``data.orders``)."""
PLAN_LINES = 12
"""Lines of a query plan or SQL text kept (the rest are counted)."""
PLAN_CHARS = 160


def names_and_dtypes(obj: Any, library: str, shape: str) -> tuple[list[str], list[str]]:
    """Column names and the library's dtype names, read from the schema alone."""
    if library == "polars":
        schema = obj.collect_schema()
        return list(schema.names()), [str(d) for d in schema.dtypes()]
    if library == "dask":
        if shape == "Series":
            return [printable(str(obj.name))], [str(obj.dtype)]
        return [printable(str(c)) for c in obj.columns], [str(d) for d in obj.dtypes.tolist()]
    if library == "duckdb":
        return list(obj.columns), [str(t) for t in obj.types]
    schema = obj.schema()  # ibis
    return list(schema.names), [str(t) for t in schema.types]


def notes(obj: Any, library: str, shape: str) -> tuple[str, ...]:
    """What else the object knows about itself, one line each; a failing read is left out."""
    lines: list[str] = []
    try:
        if library == "dask":
            lines.extend(_dask(obj))
        elif library == "polars":
            lines.extend(_block("plan (not optimised, not run)", obj.explain(optimized=False)))
        elif library == "duckdb":
            lines.extend(_block("SQL (not run)", obj.sql_query()))
        elif library == "ibis":
            lines.extend(_ibis(obj))
    except Exception:
        pass
    return tuple(lines)


def how_to_summarise(library: str, shape: str, name: str | None) -> str:
    """The sentence that says how to get the rows summarised: compute a (small) frame first."""
    if name is None:
        n = "it"
    elif _CHAIN.fullmatch(name):
        n = name
    else:
        n = f"({name})"
    ways = {
        "polars": (f"{n}.collect()", f"{n}.head(10_000).collect()"),
        "dask": (f"{n}.compute()", f"{n}.head(10_000)"),
        "duckdb": (f"{n}.df()", f"{n}.limit(10_000).df()"),
        "ibis": (f"{n}.to_pandas()", f"{n}.limit(10_000).to_pandas()"),
    }
    whole, part = ways.get(library, (f"{n}.compute()", f"{n}.head(10_000)"))
    what = "task graph" if library == "dask" else "query"
    return (
        f"lazy frame: schema only; no rows were read, since that would run its {what}. "
        f"For statistics, inject `{whole}` (or `{part}`, which reads only the rows it needs)"
    )


def _dask(obj: Any) -> list[str]:
    lines = [f"partitions: {int(obj.npartitions):,}"]
    if obj.known_divisions:
        divisions = obj.divisions
        index = obj.index.name
        label = "index" if index is None else f"index {printable(str(index))}"
        lines.append(
            f"divisions: known; {label} from {clip(printable(str(divisions[0])), 60)} "
            f"to {clip(printable(str(divisions[-1])), 60)}"
        )
    else:
        lines.append("divisions: unknown (the index is not sorted into known ranges)")
    index = obj.index
    lines.append(
        f"index: {printable(str(index.name)) if index.name is not None else 'unnamed'}, dtype {index.dtype}"
    )
    return lines


def _ibis(obj: Any) -> list[str]:
    import ibis

    try:
        sql = ibis.to_sql(obj)
    except Exception:  # not a SQL backend (polars, say): nothing more is known without running it
        return []
    return _block("SQL (not run)", str(sql))


def _block(title: str, text: str) -> list[str]:
    lines = [line.rstrip() for line in printable_lines(text) if line.strip()]
    kept = [clip(line, PLAN_CHARS) for line in lines[:PLAN_LINES]]
    more = len(lines) - len(kept)
    return [f"{title}:", *("  " + line for line in kept), *([f"  … {more:,} more lines"] if more else [])]


def printable_lines(text: str) -> list[str]:
    return [printable(line) for line in text.splitlines()]
