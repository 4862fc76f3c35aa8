"""Context from what data scientists have (#33.5): ``df.describe()`` of a wide frame sent as a table
(never statistics of statistics) with a receipt saying what was cut; previews of statsmodels results,
scikit-learn estimators, NumPy arrays, dicts of frames and long strings that honour ``--budget``,
prefer ``str()`` where the ``repr`` says nothing, and say what was cut; time-zone-aware datetimes
with min and max; and ``%inject`` errors in the user's words."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from IPython.core.error import UsageError

from nbagent._json import thaw
from nbagent.context import dataframe, estimate_tokens, variable
from nbagent.notebook.magics.injection import InjectOptions, build_injection, dropped_note, inject_usage

sm = pytest.importorskip("statsmodels.api")
sklearn_pipeline = pytest.importorskip("sklearn.pipeline")


def inject(expr: str, namespace: dict[str, Any], **options: Any) -> tuple[str, dict[str, Any], str]:
    """What ``%inject EXPR`` queues and the part of its receipt saying what was cut."""
    message = build_injection(
        expr,
        InjectOptions(**options),
        evaluate=lambda e: eval(e, {}, namespace),
        names=lambda: list(namespace),
        last_error=None,
        cell=None,
    ).message
    return message.plain_text, thaw(message.source), dropped_note(message, options.get("budget") or 1500)


@pytest.fixture(scope="module")
def ols() -> Any:
    rng = np.random.default_rng(0)
    x = sm.add_constant(pd.DataFrame({"x1": rng.normal(size=200), "x2": rng.normal(size=200)}))
    y = 1 + 2 * x.x1 - x.x2 + rng.normal(size=200)
    return sm.OLS(y, x).fit()


# -- small frames are tables ------------------------------------------------------------------------


def test_a_wide_describe_is_a_table_of_its_rows_never_statistics_of_them() -> None:
    rng = np.random.default_rng(1)
    wide = pd.DataFrame(rng.gamma(2.0, 1.5, (1000, 200)), columns=[f"F{i:03d}" for i in range(200)])
    text, source, note = inject("wide.describe()", {"wide": wide})
    assert source["form"] == "table" and source["shape"] == [8, 200] and estimate_tokens(text) <= 1500
    shown, total = source["table"]["columns"]
    assert total == 200 and 10 < shown < 200 and source["table"]["rows"] == [8, 8]
    assert "statistics:" not in text and "distinct" not in text and " · mean " not in text
    mean_row = next(line for line in text.splitlines() if line.startswith("| mean |"))
    assert mean_row.split(" | ")[1] == f"{wide['F000'].mean():.6g}"  # the real mean, as a table cell
    assert f"the first {shown} of 200 columns (the rest did not fit the token budget" in text
    assert "F199" in text  # every column still named below the table
    whole = source["table"]["whole_tokens"]
    assert f"cut to fit 1,500 tokens: {shown} of 200 columns; to get it whole: --budget " in note
    budget = int(note.split("--budget ")[1].split(",")[0])
    assert whole <= budget
    text, source, note = inject("wide.describe()", {"wide": wide}, budget=budget)
    assert source["truncated"] == [] and note == "" and "| max |" in text and "| F199 |" in text


def test_a_frame_without_columns_says_so_and_shows_its_index() -> None:
    text = dataframe(pd.DataFrame(index=["a", "b", "c"]), name="e").plain_text
    assert "no columns: 3 rows, nothing in them:\n| (index) |\n| a |\n| b |\n| c |" in text
    assert "all 3 rows" not in text and "sent whole" not in text
    text = dataframe(pd.DataFrame(index=range(5)), name="e").plain_text
    assert "no columns: 5 rows, nothing in them\n</dataframe>" in text


def test_time_zone_aware_datetimes_get_min_and_max_like_naive_ones() -> None:
    start = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    instants = [start + timedelta(hours=i) for i in range(80)]
    aware = pd.Series(instants).dt.tz_convert("Europe/Berlin")
    mixed = pd.Series(
        [t.astimezone(timezone(timedelta(hours=-5 if i % 2 else 2))) for i, t in enumerate(instants)],
        dtype=object,
    )
    frame = pd.DataFrame({"naive": aware.dt.tz_localize(None), "aware": aware, "mixed": mixed})
    for summary in (
        dataframe(frame).plain_text,
        dataframe(pl.from_pandas(frame[["naive", "aware"]])).plain_text,
    ):
        lines = {line.split(":", 1)[0]: line for line in summary.splitlines() if line.startswith("- ")}
        assert "min 2024-03-01 10:00:00 · max 2024-03-04 17:00:00" in lines["- naive"]
        assert "min 2024-03-01 10:00:00+01:00 · max 2024-03-04 17:00:00+01:00" in lines["- aware"]
    mixed_line = next(line for line in dataframe(frame).plain_text.splitlines() if line.startswith("- mixed"))
    assert "min 2024-03-01 11:00:00+02:00 · max 2024-03-04 11:00:00-05:00" in mixed_line


# -- previews ---------------------------------------------------------------------------------------


def test_a_statsmodels_summary_keeps_its_header_and_its_table_reads_as_text(ols: Any) -> None:
    namespace = {"ols": ols}
    text, source, note = inject("ols.summary()", namespace)
    lines = text.splitlines()
    assert lines[1].strip() == "OLS Regression Results" and source["form"] == "str"
    assert "coef    std err" in text and "<class" not in text and note == ""
    text, source, _ = inject("ols.summary().tables[1]", namespace)
    assert "SimpleTable'>" not in text and "x1 " in text and "P>|t|" in text


def test_an_object_whose_repr_says_nothing_lists_its_attributes_without_reading_them(ols: Any) -> None:
    text, _, _ = inject("ols", {"ols": ols})
    assert "object at 0x" in text and "its repr says nothing about its contents" in text
    assert "rsquared" in text and "`ols.summary()` may summarise it" in text


def test_a_long_string_is_sent_as_written_and_the_budget_and_receipt_say_what_was_cut(ols: Any) -> None:
    summary_text = ols.summary().as_text()
    assert len(summary_text) > 1500
    text, source, note = inject("summary_text", {"summary_text": summary_text})
    assert summary_text.splitlines()[0] in text and "coef    std err" in text and "\\n" not in text
    assert "cut" not in source and note == ""  # it fits the default budget whole
    text, source, note = inject("summary_text", {"summary_text": summary_text}, budget=200)
    assert estimate_tokens(text) <= 200 and "… (cut to fit the token budget)" in text
    cut = source["cut"]
    assert cut["total_chars"] == len(summary_text) and 0 < cut["shown_chars"] < len(summary_text)
    assert (
        f"the first {cut['shown_chars']:,} of {len(summary_text):,} characters; to get it whole: --budget"
        in note
    )
    budget = int(note.split("--budget ")[1].split()[0])
    text, source, note = inject("summary_text", {"summary_text": summary_text}, budget=budget)
    assert "cut" not in source and summary_text.splitlines()[-1].strip() in text


def test_estimators_arrays_and_dicts_of_frames_are_previewed_usefully() -> None:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.preprocessing import StandardScaler

    pipe = sklearn_pipeline.make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=10))
    text, source, _ = inject("pipe", {"pipe": pipe})
    assert "RandomForestClassifier(n_estimators=10)" in text and source["form"] == "repr"
    text, source, note = inject("arr", {"arr": np.arange(5000.0)})
    assert 'shape="5000"' in text and "..." in text
    assert "numpy shows arrays of over 1,000 items summarised" in note
    frames = {"train": pd.DataFrame({"a": range(300), "b": 1.0}), "test": pl.DataFrame({"a": [1]}), "k": 5}
    text, source, note = inject("frames", {"frames": frames})
    assert source["form"] == "items" and note == ""
    assert (
        "'train': pandas.DataFrame 300 x 2, columns a, b (`%inject frames['train']` for its summary)" in text
    )
    assert "'test': polars.DataFrame 1 x 1, columns a" in text and "'k': 5" in text
    text, _, note = inject("xs", {"xs": list(range(500))})
    assert "items past the first 50" in note


def test_budget_is_honoured_for_every_object() -> None:
    blob = {"k": "v" * 300, "items": list(range(40))}
    for budget in (40, 80, 400):
        text = variable(blob, "blob", budget_tokens=budget).plain_text
        assert estimate_tokens(text) <= budget
    text, _, _ = inject("blob", {"blob": blob}, budget=60)
    assert estimate_tokens(text) <= 60


# -- errors in the user's words ---------------------------------------------------------------------


def test_budget_errors_name_the_option_not_a_parameter() -> None:
    for value, what in (
        (pd.DataFrame({"a": [1]}), "a DataFrame summary needs at least 64 tokens"),
        ([1], "a preview needs at least 32 tokens"),
    ):
        with pytest.raises(UsageError) as raised:
            inject("x", {"x": value}, budget=20)
        said = str(raised.value)
        assert said.startswith("--budget 20 is too small: ") and what in said and "budget_tokens" not in said


def test_an_option_without_its_value_says_what_value_and_nothing_about_dashes_in_text() -> None:
    said = inject_usage("argument --rows: expected one argument", "diab")
    assert said == "--rows needs a value: `%inject diab --rows N`" and "`--`" not in said
    assert (
        inject_usage("argument --rows: invalid int value: 'ten'", "diab")
        == "--rows takes a whole number, not 'ten'"
    )
    assert "goes after a leading `--`" in inject_usage("unrecognized arguments: --colour", "a --colour b")


def test_the_tools_show_statsmodels_objects_as_their_text_and_list_them_readably(ols: Any) -> None:
    from nbagent.notebook.tools.namespace_view import describe_text, list_variables_text

    namespace = {"ols": ols, "table": ols.summary().tables[1], "summary": ols.summary()}
    table = describe_text(namespace, {}, "table")
    assert "SimpleTable'>" not in table and "coef    std err" in table
    summary = describe_text(namespace, {}, "summary")
    assert summary.splitlines()[1].strip() == "OLS Regression Results" and "<class" not in summary
    assert "rsquared" in describe_text(namespace, {}, "ols")  # its attributes, not the scrubber's
    listed = list_variables_text(namespace, {})
    assert "table · SimpleTable (statsmodels) · len 4 · ===" in listed
    assert "summary · Summary (statsmodels) · OLS Regression Results" in listed


def test_inject_errors_in_a_shell_speak_of_options(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernel_helpers import ipython_shell

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)
    with ipython_shell() as sh:
        sh.user_ns["diab"] = pd.DataFrame({"age": [50, 61]})
        said = {}
        for line in ("diab --budget 50", "diab --rows", "[1, 2] --budget 5"):
            with pytest.raises(UsageError) as raised:
                sh.run_line_magic("inject", line)
            said[line] = str(raised.value)
    assert said["diab --budget 50"] == (
        "--budget 50 is too small: a DataFrame summary needs at least 64 tokens (without --budget it gets 1,500)"
    )
    assert said["diab --rows"] == "--rows needs a value: `%inject diab --rows N`"
    assert said["[1, 2] --budget 5"].startswith("--budget 5 is too small: a preview needs at least 32 tokens")


def test_a_small_frame_too_long_for_the_budget_keeps_the_rows_that_fit_and_says_so() -> None:
    notes = pd.DataFrame({"note": [f"visit {i}: patient reports mild symptoms" for i in range(40)]})
    text, source, note = inject("notes", {"notes": notes}, budget=200)
    assert estimate_tokens(text) <= 200 and source["form"] == "table"
    shown, total = source["table"]["rows"]
    assert total == 40 and 0 < shown < 40 and "table-rows" in source["truncated"]
    assert f"the first {shown} of 40 rows (the rest did not fit the token budget" in text
    assert f"1 of 1 columns, {shown} of 40 rows; to get it whole: --budget " in note
    assert "statistics:" not in text and "distinct" not in text
