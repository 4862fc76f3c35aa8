"""How ``%inject`` reads a line, in a real kernel: options anywhere on it, the expression-or-text rule
(an expression of defined names is evaluated, a lone unknown name suggests close ones, the rest is
text and the receipt says so), the summary a realistic frame gets, and ``--last-error`` after an error
a cell caught and showed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import Kernel, read_events

from nbagent.notebook.magics.arguments import pick_options
from nbagent.notebook.magics.injection import read_line

pytestmark = pytest.mark.kernel

FRAME = """
import numpy as np, pandas as pd
rng = np.random.default_rng(7)
n = 300_000
orders = pd.DataFrame({
    "order_id": np.arange(n),
    "amount": np.where(rng.random(n) < 0.05, np.nan, rng.gamma(2.0, 30.0, n)),
    "placed": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365 * 86400, n), unit="s"),
    "region": pd.Categorical(rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1])),
    "channel": rng.choice(["web", "store", "phone"], n),
    "sku": [f"SKU-{i % 5000:05d}" for i in range(n)],
    "tags": [[np.str_("gift"), np.str_("promo")][: i % 3] for i in range(n)],
    "returned": rng.random(n) < 0.08,
    "note": np.where(rng.random(n) < 0.7, None, "call before delivery"),
})
"""


def injected(path: Path) -> list[dict[str, Any]]:
    return [m for e in read_events(path) if e.type == "agent/inbox/spliced" for m in e.data["inserted"]]


def count_after(line: str, marker: str) -> int:
    """The number written right after ``marker`` (``1,234``)."""
    found = re.search(re.escape(marker) + r"(\d{1,3}(?:,\d{3})*)", line)
    assert found is not None, (marker, line)
    return int(found.group(1).replace(",", ""))


def usage_error(result, index: int) -> str:  # type: ignore[no-untyped-def]
    reply = result.reply(index)
    assert (reply["status"], reply["ename"]) == ("error", "UsageError"), reply
    return str(reply["evalue"])


def test_options_are_read_wherever_they_stand_on_the_line() -> None:
    valued = {"--label", "--rows", "--budget"}
    assert pick_options("df --rows 3", valued) == ("--rows 3", "df")
    assert pick_options("df --label sales", valued) == ("--label sales", "df")
    assert pick_options("df.head(20)  --schema-only", valued) == ("--schema-only", "df.head(20)")
    assert pick_options('--label "q3 sales" df --rows=2', valued) == ('--label "q3 sales" --rows=2', "df")
    assert pick_options("df --row 3", valued) == ("--row 3", "df")  # argparse takes it for --rows
    assert pick_options("df[df.x > -1]", valued) == ("", "df[df.x > -1]")
    assert pick_options("-- keep the --rows as text", valued) == ("", "keep the --rows as text")


def test_the_rule_evaluates_expressions_of_defined_names_only() -> None:
    defined = {"df", "sales", "len", "x"}.__contains__
    kinds = {t: read_line(t, defined).kind for t in ("df", "df.head(3)", "len(df) > 3", "[x for x in df]")}
    assert set(kinds.values()) == {"evaluate"}
    assert [read_line(t, defined).kind for t in ("revenue", "dff.head()", 'salse["a"]')] == [
        "unknown-name"
    ] * 3
    texts = ("prices in EUR", "not important", "N/A", "units: boxes", "df and revenue")
    assert [read_line(t, defined).kind for t in texts] == ["text"] * len(texts)
    assert read_line("df.head(", defined).kind == "unfinished"


def test_inject_reads_options_anywhere_and_sentences_as_text_in_a_kernel(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("import pandas as pd; sales = pd.DataFrame({'region': ['n', 's'] * 40, 'amount': range(80)})")
        result = k.run_all(
            [
                "%inject sales --rows 3",
                "%inject sales --label q3",
                "%inject sales --schema-only",
                "%inject prices in EUR",
                "%inject not important",
                "%inject revenue",
                "%inject salse",
                "%inject sales --colour red",
            ],
            stop_on_error=False,
        )
        for i in range(5):
            assert result.reply(i)["status"] == "ok", result.text(i)
        assert "as text (it names `prices`, `EUR`, not defined here)" in result.text(3)
        assert "as text (it names `important`, not defined here)" in result.text(4)
        assert "as text" not in result.text(0)
        assert usage_error(result, 5) == (
            "`revenue` is not defined in this kernel; to send it as text use "
            "`%inject --label LABEL revenue` or a %%inject cell"
        )
        assert usage_error(result, 6).startswith(
            "`salse` is not defined in this kernel; did you mean `sales`?"
        )
        assert usage_error(result, 7) == (
            "unrecognized arguments: --colour; text that contains `--` goes after a leading `--` "
            "(`%inject -- text`) or in a %%inject cell"
        )
    messages = injected(tmp_path / "work.nbagent.sqlite")
    assert [m["source"]["kind"] for m in messages] == ["dataframe", "dataframe", "dataframe", "cell", "cell"]
    rows_3, labelled, schema, eur, important = messages
    assert "head (first 3 of 80 rows):" in rows_3["content"][0]["text"]
    assert labelled["source"]["label"] == "q3" and labelled["source"]["name"] == "sales"
    assert "schema only" in schema["content"][0]["text"]
    assert [eur["content"][0]["text"], important["content"][0]["text"]] == ["prices in EUR", "not important"]


def test_a_large_realistic_frame_keeps_the_head_rows_that_fit_and_marks_sampled_figures(
    tmp_path: Path,
) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(FRAME, timeout=120)
        receipt = k.run("%inject orders --rows 50", timeout=120)
        k.run("%inject orders.describe()")
    assert "dropped to fit 1,500 tokens: head rows (" in receipt
    assert "of the 50 asked for kept); to get them: a bigger --budget or fewer columns" in receipt
    summary, described = (m["content"][0]["text"] for m in injected(tmp_path / "work.nbagent.sqlite"))
    kept = int(summary.split("head (first ", 1)[1].split(" ")[0])
    assert 10 < kept < 50 and f"head (first {kept} of 300,000 rows; 50 asked for):" in summary
    lines = {line.split(":", 1)[0]: line for line in summary.splitlines() if line.startswith("- ")}
    # exact: the categories' counts over all rows (north is drawn with p=0.4)
    region = lines["- region"]
    assert "distinct 4 ·" in region and "in sample" not in region and "≈" not in region
    assert 115_000 < count_after(region, 'top "north" ') < 125_000
    # from the sample: marked where they stand, top counts scaled to all rows
    assert "distinct 5,000 in sample" in lines["- sku"] and 'top "SKU-' in lines["- sku"]
    assert '"web" ≈' in lines["- channel"]
    assert 95_000 < count_after(lines["- channel"], '"web" ≈') < 105_000
    assert "non-null 285," in lines["- amount"] and "(4.9% null)" in lines["- amount"]
    assert "min 2024-01-01" in lines["- placed"]
    assert lines["- tags"].startswith(
        "- tags: object · non-null 300,000 (0% null) · lists of str, length 0–2"
    )
    assert 'samples [], ["gift"], ["gift", "promo"]' in lines["- tags"]
    assert "unhashable" not in summary and "np.str_" not in summary
    assert "all 8 rows (a frame this small is sent whole, without statistics):" in described
    for stat in ("count", "mean", "std", "min", "25%", "50%", "75%", "max"):
        assert f"\n| {stat} | " in described
    assert "statistics:" not in described


def test_last_error_takes_an_error_a_cell_caught_and_showed(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        shown = k.run("try:\n    {}['missing_key']\nexcept KeyError:\n    get_ipython().showtraceback()")
        assert "KeyError" in shown
        k.run("%inject --last-error")
        k.run("1 / 0")
        k.run("%inject --last-error")
    first, second = injected(tmp_path / "work.nbagent.sqlite")
    assert first["source"]["kind"] == "error" and first["source"]["ename"] == "KeyError"
    assert "missing_key" in first["content"][0]["text"]
    assert second["source"]["ename"] == "ZeroDivisionError"
