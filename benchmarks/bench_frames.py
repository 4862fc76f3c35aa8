"""Speed of the DataFrame summary (SPEC §9.3): a 1M-row × 20-column and a 500-column frame, pandas and polars.

Run: ``python benchmarks/bench_frames.py [--repeats N] [--rows N] [--wide-rows N] [--no-baseline]``. Prints one table: per frame, the
median and best time of ``nbagent.context.dataframe()`` (facts plus rendering), the median of the
fact collection alone, and a baseline timed once: the library's own ``describe()`` of the same frame,
which computes comparable statistics (count, mean, std, min, max; pandas' also the top value of text)
but for every column, where a wide frame's summary computes them for its 15 edge columns only.
Compare ratios: the machine is shared and its figures drift. Speed is never asserted in the tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

from nbagent.context import dataframe, estimate_tokens
from nbagent.context._collect import collect

BUDGET = 1500


def long_frame(rows: int) -> dict[str, Any]:
    """20 columns: 8 float (one with nulls, one with infinities), 5 int, 2 datetime, 2 text, 2 bool, 1 categorical."""
    rng = np.random.default_rng(1)
    data: dict[str, Any] = {}
    for i in range(8):
        data[f"f{i}"] = rng.normal(i, 1 + i, rows)
    data["f0"] = np.where(rng.random(rows) < 0.05, np.nan, data["f0"])
    data["f1"][:: rows // 10] = np.inf
    for i in range(5):
        data[f"i{i}"] = rng.integers(0, 10 ** (i + 2), rows)
    start = np.datetime64("2020-01-01T00:00:00", "ms")
    data["t0"] = start + np.arange(rows).astype("timedelta64[s]").astype("timedelta64[ms]")
    data["t1"] = start + rng.integers(0, 10**6, rows).astype("timedelta64[m]").astype("timedelta64[ms]")
    data["s0"] = rng.choice(np.array(["north", "south", "east", "west"]), rows)
    data["s1"] = np.char.add("id-", rng.integers(0, rows, rows).astype(str))
    data["b0"] = rng.random(rows) < 0.3
    data["b1"] = rng.random(rows) < 0.7
    data["c0"] = rng.choice(np.array(["a", "b", "c"]), rows)
    return data


def wide_frame(rows: int, cols: int = 500) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    data: dict[str, Any] = {}
    for i in range(cols):
        if i % 5 == 4:
            data[f"col_{i}"] = rng.integers(0, 100, rows)
        else:
            data[f"col_{i}"] = rng.normal(size=rows)
    return data


def as_pandas(data: dict[str, Any]) -> pd.DataFrame:
    frame = pd.DataFrame(data)
    if "c0" in frame:
        frame["c0"] = frame["c0"].astype("category")
    return frame


def as_polars(data: dict[str, Any]) -> pl.DataFrame:
    frame = pl.DataFrame(data)
    if "c0" in frame.columns:
        frame = frame.with_columns(pl.col("c0").cast(pl.Categorical))
    return frame


def timed(fn: Callable[[], object], repeats: int, *, warm: bool = True) -> list[float]:
    if warm:
        fn()  # caches and lazy imports
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the long frame")
    parser.add_argument("--wide-rows", type=int, default=1_000, help="rows of the 500-column frame")
    parser.add_argument("--no-baseline", action="store_true", help="skip describe() (polars' takes seconds)")
    args = parser.parse_args()

    long_data, wide_data = long_frame(args.rows), wide_frame(args.wide_rows)
    frames = [
        (f"pandas {args.rows:,} x 20", as_pandas(long_data)),
        (f"polars {args.rows:,} x 20", as_polars(long_data)),
        (f"pandas {args.wide_rows:,} x 500", as_pandas(wide_data)),
        (f"polars {args.wide_rows:,} x 500", as_polars(wide_data)),
        (f"pandas {args.wide_rows:,} x 500 schema-only", as_pandas(wide_data)),
    ]
    header = ("frame", "summary ms", "best", "facts ms", "describe() ms", "ratio", "tokens", "dropped")
    rows = []
    for label, frame in frames:
        schema_only = "schema-only" in label
        summary = timed(
            lambda f=frame, s=schema_only: dataframe(f, schema_only=s, budget_tokens=BUDGET), args.repeats
        )
        facts = timed(lambda f=frame, s=schema_only: collect(f, rows=5, schema_only=s), args.repeats)
        describe = [float("nan")]
        if not (schema_only or args.no_baseline):  # once: polars' describe() of 500 columns takes seconds
            with warnings.catch_warnings():  # pandas warns about the infinities of f1
                warnings.simplefilter("ignore", RuntimeWarning)
                describe = timed(frame.describe, 1, warm=False)
        message = dataframe(frame, schema_only=schema_only, budget_tokens=BUDGET)

        med, base = statistics.median(summary), statistics.median(describe)
        rows.append(
            (
                label,
                f"{med:.0f}",
                f"{min(summary):.0f}",
                f"{statistics.median(facts):.0f}",
                f"{base:.0f}",
                f"{med / base:.2f}" if base == base else "-",
                str(estimate_tokens(message.plain_text)),
                ",".join(message.source["truncated"]) or "-",
            )
        )
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
