"""The inbox and timeline widgets in a real JupyterLab (and Notebook 7), in Debian's Chromium."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import (
    kinds,
    open_notebook,
    output_text,
    run_cell,
    save,
    set_theme,
    setup_cell,
)

pytestmark = pytest.mark.browser

DATAFRAME_CELL = """\
df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "temp_c": [3.5, 18.2, 31.0]})
agent.inject(dataframe(df, name="df"));"""


def saved_view_shows(page: Any, needle: str) -> None:
    """Wait until some output's saved ``text/html`` holds ``needle`` (outputs are re-published on change)."""
    page.wait_for_function(
        """(needle) => window.jupyterapp.shell.currentWidget.content.widgets.some(c => { const o = c.model.outputs;
          if (!o) return false; for (let k = 0; k < o.length; k++) { const d = o.get(k).data['text/html'];
            if (d && [].concat(d).join('').includes(needle)) return true; }
          return false; })""",
        arg=needle,
    )


def turn_done(page: Any, turn: int = 1) -> None:
    """Wait for ``turn`` to complete, in the widget and in the saved view of every timeline output
    (each is re-published after the change), so a save now holds the finished turn."""
    page.locator(f'.nba-timeline .nba-turn[data-id="turn-{turn}"][data-status="completed"]').first.wait_for()
    page.wait_for_function(
        """(needle) => { let timelines = 0, current = 0;
        for (const c of window.jupyterapp.shell.currentWidget.content.widgets) { const o = c.model.outputs;
          if (!o) continue; for (let k = 0; k < o.length; k++) { const d = o.get(k).data['text/html'];
            const html = d ? [].concat(d).join('') : '';
            if (html.includes('nba-timeline')) { timelines++; if (html.includes(needle)) current++; } } }
        return timelines > 0 && current === timelines; }""",
        arg=f'data-id="turn-{turn}" data-status="completed"',
    )


def timeline_turn(page: Any, turn: int) -> Any:
    return page.locator(f'.nba-timeline .nba-turn[data-id="turn-{turn}"]')


def test_an_injected_dataframe_waits_in_the_inbox_then_reaches_the_model_before_the_prompt(
    lab: Lab, page: Any
) -> None:
    name = lab.write_notebook(
        "inject",
        [
            setup_cell("inject", '[Response("Pune is warmest at 31.0 °C.", chunk_size=4, chunk_delay=0.02)]'),
            DATAFRAME_CELL,
            'agent.followup("Which city is warmest?");',
            'pathlib.Path("model_saw.json").write_text(json.dumps([m.plain_text for m in model.requests[0].messages]))',
        ],
    )
    open_notebook(page, lab.lab_url(name, "inject"))
    run_cell(page, 0)
    inbox = page.locator(".nba-inbox")
    inbox.wait_for()
    # The module the browser runs is the widget's file with the shared painter in front: its
    # painted mark is set by the painter's code, and the lab extension shows the live view on it.
    live = page.locator('.jp-nbagent-output[data-view="live"]')
    live.locator('.nba-inbox[data-nba-painted="true"]').wait_for()
    live.locator('.nba-timeline[data-nba-painted="true"]').wait_for()
    run_cell(page, 1)
    item = inbox.locator('[data-queue="next-step"] .nba-inbox-item')
    item.wait_for()
    assert kinds(item, 1) == ["dataframe"]
    assert item.locator(".nba-badge").inner_text() == "dataframe"
    assert item.locator(".nba-label").inner_text() == "df · 3×2 · pandas"
    assert page.locator(".nba-timeline .nba-turn").count() == 0  # inject never starts the model
    shot(page, "01-inbox-dataframe-pending")

    run_cell(page, 2)
    turn = timeline_turn(page, 1)
    turn_done(page)
    messages = turn.locator(".nba-msg")
    assert kinds(messages, 2) == ["dataframe", "user"]
    badges = messages.locator(".nba-badge")
    colours = badges.evaluate_all("els => els.map(e => getComputedStyle(e).color)")
    assert colours[0] != colours[1]
    assert badges.all_inner_texts() == ["dataframe", "followup"]
    assert turn.locator(".nba-answer .nba-answer-text").inner_text() == "Pune is warmest at 31.0 °C."
    page.locator('.nba-inbox[data-pending="0"]').wait_for()

    messages.first.locator("summary").click()
    detail = messages.first.locator(".nba-detail pre")
    detail.wait_for()
    run_cell(page, 3)
    model_saw = json.loads((lab.root / "model_saw.json").read_text())
    assert detail.text_content() == model_saw[0]
    assert model_saw[0].startswith("<dataframe")
    shot(page, "02-timeline-dataframe-then-prompt")

    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    saved = json.loads((lab.root / name).read_text())
    html = [
        "".join(o["data"]["text/html"])
        for o in saved["cells"][0]["outputs"]
        if "text/html" in o.get("data", {})
    ]
    assert len(html) == 2  # the inbox and the timeline, each with its static snapshot
    static = html[1].split("</style>")[1]
    assert static.index('data-kind="dataframe"') < static.index('data-kind="user"')


def test_a_steer_sent_while_a_turn_streams_becomes_its_next_step(lab: Lab, page: Any) -> None:
    slow = 'Response("Profiling the table: " + "row by row, " * 24, chunk_size=6, chunk_delay=0.05)'
    name = lab.write_notebook(
        "steer",
        [
            setup_cell("steer", f'[{slow}, Response("No nulls in any column.")]'),
            'agent.followup("Profile the table");',
            'print(agent.status); agent.steer("Also check for nulls");',
        ],
    )
    open_notebook(page, lab.lab_url(name, "steer"))
    run_cell(page, 0)
    run_cell(page, 1)
    running = page.locator('.nba-timeline .nba-turn[data-status="running"][data-id="turn-1"]')
    running.locator(".nba-answer.nba-streaming").wait_for()
    assert page.locator(".nba-timeline .nba-head .nba-pill").inner_text() == "turn 1 running"
    shot(page, "03-running-turn-streams")

    run_cell(page, 2)
    assert output_text(page, 2).strip() == "running"  # the steer really arrived mid-turn
    turn_done(page)
    turn = timeline_turn(page, 1)
    assert page.locator(".nba-timeline .nba-turn").count() == 1
    assert turn.locator(".nba-step").count() == 2
    step2 = turn.locator(".nba-step").nth(1)
    assert kinds(step2.locator(".nba-msg"), 1) == ["user"]
    assert step2.locator(".nba-msg .nba-line").inner_text() == "Also check for nulls"
    assert step2.locator(".nba-msg .nba-badge").inner_text() == "steer"  # not a followup
    assert step2.locator(".nba-answer-text").inner_text() == "No nulls in any column."
    assert turn.locator(".nba-step").nth(0).locator(".nba-answer-text").inner_text().startswith("Profiling")
    assert turn.locator(".nba-mark[data-mark=claim]").all_inner_texts() == [
        "took from next-turn: followup «Profile the table»",
        "took from next-step: steer «Also check for nulls»",
    ]
    shot(page, "04-steer-is-the-next-step")


def test_the_remove_button_cancels_a_pending_item(lab: Lab, page: Any) -> None:
    name = lab.write_notebook(
        "remove",
        [
            setup_cell("remove", "[]").replace("model=model", 'model="echo"'),
            'agent.inject(cell_text("keep this note", label="note"))\nagent.inject(variable({"rows": 3}, "cfg"));',
            'last = agent.events[-1]\nprint(last.type, last.data["outcome"], last.data["removed_count"], len(last.data["inserted"]))',
            'agent.followup("What do you see?");',
        ],
    )
    open_notebook(page, lab.lab_url(name, "remove"))
    run_cell(page, 0)
    run_cell(page, 1)
    items = page.locator('.nba-inbox [data-queue="next-step"] .nba-inbox-item')
    page.locator('.nba-inbox[data-pending="2"]').wait_for()
    assert kinds(items, 2) == ["cell", "variable"]
    shot(page, "05a-before-remove")
    page.locator('.nba-inbox[data-live="true"]').wait_for()  # the kernel answered: removing works
    items.nth(1).locator("button.nba-remove").click()
    page.locator('.nba-inbox[data-pending="1"]').wait_for()
    assert kinds(items, 1) == ["cell"]
    mark = page.locator('.nba-timeline .nba-mark[data-mark="cancel"]')
    assert mark.inner_text() == "canceled from next-step before the model saw it: variable cfg · dict"
    run_cell(page, 2)
    assert output_text(page, 2).strip() == "agent/inbox/spliced canceled 1 0"
    shot(page, "05b-removed-and-logged")

    run_cell(page, 3)
    turn_done(page)
    assert kinds(timeline_turn(page, 1).locator(".nba-msg"), 2) == ["cell", "user"]


def test_the_widgets_render_in_notebook_7(lab: Lab, page: Any) -> None:
    name = lab.write_notebook(
        "nb7",
        [setup_cell("nb7", '["Hello from Notebook 7."]'), DATAFRAME_CELL, 'agent.followup("hi");'],
    )
    open_notebook(page, lab.notebook7_url(name))
    for i in range(3):
        run_cell(page, i)
    turn_done(page)
    assert kinds(timeline_turn(page, 1).locator(".nba-msg"), 2) == ["dataframe", "user"]
    assert page.locator('.nba-inbox[data-pending="0"]').count() == 1
    shot(page, "06-notebook7")


def test_both_themes_style_the_badges_through_jupyterlab_variables(lab: Lab, page: Any) -> None:
    name = lab.write_notebook(
        "themes", [setup_cell("themes", '["ok"]'), DATAFRAME_CELL, 'agent.followup("hi");']
    )
    open_notebook(page, lab.lab_url(name, "themes"))
    for i in range(3):
        run_cell(page, i)
    turn_done(page)

    def look() -> dict[str, str]:
        bg = page.locator(".nba-timeline").evaluate("e => getComputedStyle(e).backgroundColor")
        user = page.locator(".nba-msg .nba-badge[data-kind=user]").evaluate("e => getComputedStyle(e).color")
        return {"bg": bg, "user": user}

    light = look()
    try:
        set_theme(page, "JupyterLab Dark")
        page.wait_for_function(
            "bg => { const e = document.querySelector('.nba-timeline');"
            " return e && getComputedStyle(e).backgroundColor !== bg; }",
            arg=light["bg"],
        )
        dark = look()
        shot(page, "07-dark-theme")
    finally:
        set_theme(page, "JupyterLab Light")
    assert dark["user"] != light["user"]
    assert _luminance(dark["bg"]) < 0.3 < _luminance(light["bg"])


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_the_static_snapshot_renders_without_a_kernel(lab: Lab, page: Any, browser: Any) -> None:
    name = lab.write_notebook(
        "static",
        [
            setup_cell(
                "static",
                '[Response(tool_calls=[ToolCall("lookup", {"city": "Pune"})]), "Pune: 31 °C, the warmest."]',
            )
            .replace(", model=model)", ", model=model, tools=[lookup])")
            .replace(
                "model = ScriptedModel",
                '@nbagent.tool\ndef lookup(city: str) -> str:\n    """Look a city up."""\n    return f"{city}: 31.0"\n\nmodel = ScriptedModel',
            ),
            DATAFRAME_CELL,
            'agent.followup("Which city is warmest?");',
            "import time\nwhile agent.status != 'idle': await __import__('asyncio').sleep(0.05)\nshow(agent);",
        ],
    )
    open_notebook(page, lab.lab_url(name, "static"))
    for i in range(4):
        run_cell(page, i)
    turn_done(page)
    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    saved = json.loads((lab.root / name).read_text())
    outputs = saved["cells"][3]["outputs"]
    html = "".join(outputs[1]["data"]["text/html"])
    static = browser.new_page(viewport={"width": 1000, "height": 700})
    try:
        static.set_content(f"<html><body>{html}</body></html>")
        assert kinds(static.locator(".nba-msg"), 2) == ["dataframe", "user"]
        assert static.locator(".nba-tool b").inner_text() == "lookup"
        static.locator(".nba-msg summary").first.click()
        assert static.locator(".nba-msg .nba-detail pre").first.inner_text().startswith("<dataframe")
        shot(static, "08-static-snapshot", static.locator(".nbagent"))
    finally:
        static.close()


def test_a_saved_notebook_reopened_without_its_kernel_shows_the_timeline(
    lab: Lab, page: Any, browser: Any
) -> None:
    """With JupyterLab's "Save Widget State Automatically" on (the suite's lab settings turn it on),
    the widgets render from the state saved in the notebook, whose ``snapshot`` holds the timeline."""
    name = lab.write_notebook(
        "reopen",
        [
            setup_cell("reopen", '["Pune is warmest."]'),
            DATAFRAME_CELL,
            'agent.followup("Which city is warmest?");',
            "while agent.status != 'idle': await __import__('asyncio').sleep(0.05)\nshow(agent);",
            'agent.inject(cell_text("still pending"));',
        ],
    )
    open_notebook(page, lab.lab_url(name, "reopen"))
    for i in range(5):
        run_cell(page, i)
    turn_done(page)
    page.locator('.nba-inbox[data-pending="1"][data-live="true"]').last.wait_for()
    saved_view_shows(page, 'data-pending="1"')  # re-published, so saving now keeps it current
    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:shutdown')")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel == null"
    )
    page.close()
    again = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        open_notebook(again, lab.lab_url(name, "reopen-without-kernel"))
        turn = again.locator('.nba-timeline .nba-turn[data-id="turn-1"][data-status="completed"]').last
        turn.wait_for()
        assert kinds(turn.locator(".nba-msg"), 2) == ["dataframe", "user"]
        assert "Pune is warmest." in turn.inner_text()
        assert again.get_by_text("model not found").count() == 0
        # The inbox output is painted from its saved bundle by the lab extension: the pending item is
        # there to read, with no remove button, since no kernel could act on a click.
        inbox = again.locator('.jp-nbagent-output[data-view="saved"] .nba-inbox').first  # re-published
        inbox.locator(".nba-inbox-item", has_text="still pending").wait_for()
        assert inbox.locator(".nba-remove").count() == 0
        first = again.locator(".nba-timeline").first  # shown before the turn, saved after it
        assert "Pune is warmest." in first.inner_text()
        shot(again, "09-reopened-without-kernel")
    finally:
        again.close()
