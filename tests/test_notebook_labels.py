"""One label function for every view: badges, short labels and first lines, and the live cell view."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from kernel_helpers import ipython_shell, magics

import nbagent
from nbagent import UserMessage, context
from nbagent.models import ScriptedModel
from nbagent.views import TIMELINE_MIME, TurnView, describe_message

TRACEBACK = "Traceback (most recent call last):\n  File \"<cell>\", line 1\nKeyError: 'regoin'"


def label(message: UserMessage) -> str:
    """What a row shows after the badge: the label, else the first line."""
    described = describe_message(message)
    return described.label or described.first_line


def frame(rows: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"a": range(rows), "b": [1.5] * rows, "c": ["x"] * rows})


def test_a_dataframe_is_labelled_by_name_shape_and_library_not_its_opening_tag() -> None:
    message = context.dataframe(frame(), name="df")
    assert message.plain_text.startswith("<dataframe ")
    assert label(message) == "df · 50×3 · pandas"


def test_a_polars_dataframe_names_its_library() -> None:
    pl = pytest.importorskip("polars")
    message = context.dataframe(pl.DataFrame({"x": [1, 2]}), name="lf")
    assert label(message) == "lf · 2×1 · polars"


def test_a_variable_is_labelled_by_name_and_type() -> None:
    assert label(context.variable({"threshold": 3}, "config")) == "config · dict"
    assert label(context.variable(Path("/tmp"), "where")).startswith("where · ")


def test_an_error_is_labelled_ename_colon_evalue_cut_to_one_short_line() -> None:
    assert label(context.error("KeyError", "'regoin'", TRACEBACK)) == "KeyError: 'regoin'"
    long = context.error("ValueError", "bad value " * 30 + "\nsecond line", "ValueError: …")
    text = label(long)
    assert text.startswith("ValueError: bad value bad value") and text.endswith("…")
    assert len(text) <= 80 and text.endswith(" bad…") and "\n" not in text  # cut at a word


def test_cell_text_shows_its_label_or_else_its_first_line() -> None:
    assert label(context.cell_text("metres\nnot feet", label="units")) == "units"
    assert label(context.cell_text("\n  prices are in EUR  \nsecond line")) == "prices are in EUR"


async def test_a_session_reference_shows_the_referenced_sessions_label(tmp_path: Path) -> None:
    db = tmp_path / "old.nbagent.sqlite"
    agent = nbagent.open_session(db, model=ScriptedModel(["fine"]))
    agent.followup("how is it going?")
    await agent.when_idle()
    await agent.close()
    sid = agent.session_id
    message = context.session_reference(db, sid, label="yesterday's analysis")
    assert label(message) == "yesterday's analysis"


def test_a_plugin_shows_its_plugin_name() -> None:
    message = UserMessage.text("<catalog>…</catalog>", source={"kind": "plugin", "plugin": "warehouse"})
    assert label(message) == "warehouse"


def test_typed_prompts_and_unknown_kinds_show_their_first_line_past_a_frame_tag() -> None:
    assert label(UserMessage.text("\nwhich region?\nand why")) == "which region?"
    odd = UserMessage.text("<thing a=1>\nbody", source={"kind": "something-new", "name": "ignored"})
    assert label(odd) == "body"


def test_missing_source_fields_fall_back_to_the_first_line() -> None:
    for source in (
        {"kind": "dataframe"},
        {"kind": "error"},
        {"kind": "plugin"},
        {"kind": "session-reference"},
    ):
        assert label(UserMessage.text("first\nsecond", source=source)) == "first"


def test_the_badge_is_a_user_facing_word_and_a_typed_prompt_is_named_by_its_queue() -> None:
    prompt = UserMessage.text("go")
    assert [describe_message(prompt, queue=q).badge for q in ("next-turn", "next-step", None)] == [
        "followup",
        "steer",
        "you",
    ]
    kinds = ("dataframe", "cell", "session-reference", "tool", "something-new")
    assert [describe_message(UserMessage.text("x", source={"kind": k})).badge for k in kinds] == [
        "dataframe",
        "cell",
        "recall",
        "tool result",
        "something-new",
    ]


def test_a_dataframe_row_shows_shape_and_columns_and_an_error_row_its_exception() -> None:
    df = context.dataframe(pd.DataFrame({"city": ["Oslo"] * 1000, "temp": [1.5] * 1000}), name="df")
    described = describe_message(df)
    assert (described.label, described.first_line) == (
        "df · 1000×2 · pandas",
        "1,000 rows × 2 columns: city, temp",
    )
    assert "RangeIndex" not in described.first_line and described.more_lines > 3
    error = describe_message(context.error("KeyError", "'missing_0'", TRACEBACK))
    assert (error.badge, error.label, error.first_line) == ("error", "KeyError: 'missing_0'", "")


def test_a_frame_without_a_row_count_names_its_columns() -> None:
    lazy = UserMessage.text("<dataframe>\nschema\n</dataframe>", source={"kind": "dataframe", "name": "lf",
                            "library": "polars", "shape": [None, 2], "columns": ["a", "b"]})  # fmt: skip
    described = describe_message(lazy)
    assert (described.label, described.first_line) == ("lf · ?×2 · polars", "2 columns: a, b")


def test_long_first_lines_are_cut_at_a_word_with_an_ellipsis() -> None:
    text = "the quarterly figures 1234567 and 7654321 " * 10
    line = describe_message(UserMessage.text(text)).first_line
    assert line.endswith("…") and len(line) <= 160
    assert text.startswith(line[:-1]) and text[len(line) - 1] == " "  # cut between words


async def _record_session() -> tuple[nbagent.Event, ...]:
    agent = nbagent.open_session(None, model=ScriptedModel(["ok"]))
    agent.inject(context.dataframe(frame(), name="df"))
    agent.inject(context.error("KeyError", "'regoin'", TRACEBACK))
    agent.inject(context.cell_text("metres", label="units"))
    agent.followup("what is in df?")
    await agent.when_idle()
    events = agent.events
    await agent.close()
    return events


async def test_the_live_turn_view_shows_the_same_labels_as_every_view() -> None:
    view = TurnView("followup", "what is in df?")
    view.claimed(1)
    view.feed(await _record_session())
    bundle = view.bundle()
    text = bundle["text/plain"]
    assert text.splitlines()[:6] == [
        "followup «what is in df?» · turn 1 · done",
        "step 1",
        "  ← [dataframe] df · 50×3 · pandas — 50 rows × 3 columns: a, b, c",
        "  ← [error] KeyError: 'regoin'",
        "  ← [cell] units — metres",
        "  ← [followup] what is in df?",
    ]
    assert text.splitlines()[-1] == "turn 1: completed"
    html = bundle["text/html"]
    assert "<dataframe" not in text and "df · 50×3 · pandas" in html
    assert (
        'class="nbagent nba-live"' in html
        and "#e0e0e0" not in html
        # no inline styles but each meter part's share and colour and the legend's swatches (their data)
        and html.split("</style>")[1].count("style=")
        == html.count('style="flex-grow:') + html.count('<span class="nba-swatch" style="background:')
    )
    data = bundle[TIMELINE_MIME]
    assert data["scope"] == {"turn": 1} and data["headline"] == "followup «what is in df?» · turn 1 · done"


def test_a_cells_live_output_labels_an_injected_dataframe_briefly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)

    with ipython_shell() as sh:
        sh.user_ns["df"] = frame()
        sh.run_cell("%inject df")
        sh.run_cell("%followup describe df")
        view = magics(sh).session.views[-1]
        magics(sh).session.wait_idle()
        view.refresh()
        assert view.final
        text = view.view.bundle()["text/plain"]
    assert (
        "  ← [dataframe] df · 50×3 · pandas — 50 rows × 3 columns: a, b, c\n  ← [followup] describe df\n"
        in text
    )
