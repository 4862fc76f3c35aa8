"""What a DataFrame summary keeps and says: a small frame whole as a table, as many head rows as fit
the budget, sampled figures marked where they stand (category counts exact), and list and struct
columns described as such."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

from nbagent._json import thaw
from nbagent.context import dataframe, estimate_tokens

CAPTURED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def summarize(frame: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    message = dataframe(frame, name="df", captured_at=CAPTURED, **kwargs)
    return message.plain_text, thaw(message.source)


def test_describe_is_sent_whole_with_all_eight_rows_and_no_statistics_of_statistics() -> None:
    rng = np.random.default_rng(3)
    big = pd.DataFrame({"amount": rng.normal(100, 15, 5000), "units": rng.integers(0, 50, 5000)})
    text, source = summarize(big.describe())
    assert source["form"] == "table" and source["truncated"] == [] and source["shape"] == [8, 2]
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == "| (index) | amount | units |"
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows[1:]] == [
        "count", "mean", "std", "min", "25%", "50%", "75%", "max"
    ]  # fmt: skip
    assert "| count | 5000 | 5000 |" in rows and "statistics:" not in text and "distinct" not in text
    assert text.endswith("columns (2):\n- amount, units: float64\n</dataframe>")


def test_a_small_polars_frame_is_sent_whole_and_a_wide_one_as_the_columns_that_fit() -> None:
    text, source = summarize(pl.DataFrame({"city": ["Oslo", "Lima"], "temp": [1.5, 19.0]}))
    assert source["form"] == "table"
    assert (
        "all 2 rows (a frame this small is sent whole, without statistics):\n| city | temp |\n"
        "| Oslo | 1.5 |" in text
    )
    wide = pd.DataFrame(np.random.default_rng(0).random((50, 300)))
    text, source = summarize(wide)
    assert source["form"] == "table" and estimate_tokens(text) <= 1500  # whole would not fit
    shown, total = source["table"]["columns"]
    assert total == 300 and 0 < shown < 300 and source["table"]["rows"] == [50, 50]
    assert f"all 50 rows and the first {shown} of 300 columns (the rest did not fit" in text
    assert "statistics:" not in text and "mean" not in text
    text, source = summarize(pd.DataFrame({"a": range(60)}))
    assert source["form"] == "snapshot" and "head (first 5 of 60 rows):" in text  # over 50 rows


def test_the_head_keeps_as_many_rows_as_fit_and_the_source_says_how_many() -> None:
    frame = pd.DataFrame({f"col_{i}": [f"value {i}-{r}" for r in range(1000)] for i in range(8)})
    text, source = summarize(frame, rows=200)
    assert estimate_tokens(text) <= 1500
    asked, shown = source["head_rows"]
    assert asked == 200 and 5 < shown < 200
    assert f"head (first {shown} of 1,000 rows; 200 asked for):" in text
    assert len([line for line in text.splitlines() if line.startswith("| value 0-")]) == shown
    roomier, more = summarize(frame, rows=200, budget_tokens=4000)
    assert more["head_rows"][1] > shown and estimate_tokens(roomier) <= 4000
    _, enough = summarize(frame, rows=3)
    assert "head_rows" not in enough and "head" not in enough["truncated"]


def test_sampled_figures_are_marked_and_category_counts_are_exact() -> None:
    n = 300_000
    rng = np.random.default_rng(11)
    frame = pl.DataFrame(
        {
            "region": pl.Series(rng.choice(["north", "south"], n, p=[0.75, 0.25])).cast(pl.Categorical),
            "channel": rng.choice(["web", "store"], n),
            "id": np.arange(n),
        }
    )
    text, _ = summarize(frame)
    lines = {line.split(":", 1)[0]: line for line in text.splitlines() if line.startswith("- ")}
    exact = frame["region"].value_counts().to_dict(as_series=False)
    north = exact["count"][exact["region"].index("north")]
    assert f'top "north" {north:,}, ' in lines["- region"] and "in sample" not in lines["- region"]
    web = int(re.search(r'"web" ≈([\d,]+)', lines["- channel"]).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert abs(web - (frame["channel"] == "web").sum()) < 0.02 * n  # scaled from the sample
    assert "distinct 2 in sample" in lines["- channel"] and "distinct 100,000 in sample" in lines["- id"]
    assert "min 0 · max 299999" in lines["- id"]  # exact over all rows, unmarked


def test_list_and_struct_columns_read_as_such_without_unavailable_statistics() -> None:
    text, _ = summarize(
        pl.DataFrame(
            {
                "tags": [["a", "b"], [], None, ["c"]] * 20,
                "point": [{"x": 1, "label": "p"}, None, {"x": 3, "label": "q"}, {"x": 4, "label": None}] * 20,
            }
        )
    )
    lines = {line.split(":", 1)[0]: line for line in text.splitlines() if line.startswith("- ")}
    assert lines["- tags"] == (
        "- tags: List(String) · non-null 60 (25.0% null) · lists of str, length 0–2 · samples "
        '["a", "b"], [], ["c"]'
    )
    assert "structs of " in lines["- point"] and "2 fields" in lines["- point"]
    assert '{"x": 1, "label": "p"}' in lines["- point"]
    assert "unavailable" not in text and "unhashable" not in text
    text, _ = summarize(pd.DataFrame({"tags": [[np.str_("b"), "c"], [np.int64(2)]] * 40}))
    assert 'samples ["b", "c"], [2]' in text and "np." not in text
