"""Short, source-aware labels for messages in the live per-cell display (and the transcript's notes)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from kernel_helpers import ipython_shell, magics

import nbagent
from nbagent import UserMessage, context
from nbagent.labels import badge, context_label
from nbagent.models import ScriptedModel
from nbagent.notebook.turn_view import fold_turn, render_html, render_text

TRACEBACK = "Traceback (most recent call last):\n  File \"<cell>\", line 1\nKeyError: 'regoin'"


def label(message: UserMessage) -> str:
    return context_label(message.source, message.plain_text)


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
    assert len(text) == 80 and "\n" not in text


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


def test_typed_prompts_and_unknown_kinds_show_their_first_line() -> None:
    assert label(UserMessage.text("\nwhich region?\nand why")) == "which region?"
    odd = UserMessage.text("<thing a=1>\nbody", source={"kind": "something-new", "name": "ignored"})
    assert label(odd) == "<thing a=1>"


def test_missing_source_fields_fall_back_to_the_first_line() -> None:
    for source in (
        {"kind": "dataframe"},
        {"kind": "error"},
        {"kind": "plugin"},
        {"kind": "session-reference"},
    ):
        assert context_label(source, "first\nsecond") == "first"


def test_the_badge_is_you_for_a_typed_prompt_and_the_kind_otherwise() -> None:
    assert badge({"kind": "user"}) == "you"
    assert [badge({"kind": k}) for k in ("dataframe", "cell", "something-new")] == [
        "dataframe",
        "cell",
        "something-new",
    ]


async def test_the_live_turn_view_shows_short_labels_for_what_the_step_read() -> None:
    agent = nbagent.open_session(None, model=ScriptedModel(["ok"]))
    agent.inject(context.dataframe(frame(), name="df"))
    agent.inject(context.error("KeyError", "'regoin'", TRACEBACK))
    agent.inject(context.cell_text("metres", label="units"))
    agent.followup("what is in df?")
    await agent.when_idle()
    events = agent.events
    await agent.close()
    view = fold_turn(events, 1, "followup «what is in df?» · turn 1 · done")
    text = render_text(view)
    assert text.splitlines()[1:6] == [
        "step 1",
        "  ← [dataframe] df · 50×3 · pandas",
        "  ← [error] KeyError: 'regoin'",
        "  ← [cell] units",
        "  ← [you] what is in df?",
    ]
    html = render_html(view)
    assert "&lt;dataframe" not in html and "<dataframe" not in text
    assert "df · 50×3 · pandas" in html


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
        text = render_text(view.view)
    assert "  ← [dataframe] df · 50×3 · pandas\n  ← [you] describe df\n" in text
