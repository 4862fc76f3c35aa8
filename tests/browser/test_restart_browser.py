"""A kernel restart mid-turn, in a real JupyterLab in Debian's Chromium: the cell whose turn waited
for an approval shows the turn's true end (the log's "canceled (closed)"), and so does the notebook
as saved (issue #32 item 12)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import open_notebook, run_cell, save
from page_errors import PageErrors

pytestmark = pytest.mark.browser

TIMELINE = "application/vnd.nbagent.timeline+json"

SETUP = """\
%load_ext nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('run_code', {'code': 'x = 1'}, id='c0')]), Response("done")]))"""

RESTART_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()"


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


@pytest.mark.parametrize("front_end", ["lab", "notebook7"])
def test_a_restart_mid_turn_shows_the_turns_true_end_on_screen_and_in_the_saved_file(
    lab: Lab, page: Any, front_end: str
) -> None:
    name = lab.write_notebook(f"restart-mid-turn-{front_end}", [SETUP, "%followup go"])
    errors = PageErrors().watch(page)
    url = lab.lab_url(name, f"restart-{front_end}") if front_end == "lab" else lab.notebook7_url(name)
    open_notebook(page, url)
    run_cell(page, 0)
    run_cell(page, 1)  # returns at once; the turn waits for an approval
    cell(page, 1).locator('.nba-approval[data-state="pending"]').wait_for()
    shot(page, f"restart-01-{front_end}-waiting-for-approval", cell(page, 1))

    page.evaluate(RESTART_JS)
    # The old kernel closes its agent (turn/end canceled, closed); the cell says so within seconds.
    ended = cell(page, 1).locator(".jp-nbagent-output").get_by_text("turn 1 · done")
    ended.wait_for(timeout=60_000)
    cell(page, 1).get_by_text("canceled (closed)").first.wait_for()
    assert cell(page, 1).locator(".nba-approval").count() == 0
    assert "waiting for your approval" not in cell(page, 1).inner_text()
    shot(page, f"restart-02-{front_end}-true-end-after-restart", cell(page, 1))

    save(page)
    saved = json.loads((lab.root / name).read_text(encoding="utf-8"))
    outputs = saved["cells"][1]["outputs"]
    bundles = [o["data"][TIMELINE] for o in outputs if TIMELINE in o.get("data", {})]
    assert bundles, outputs
    for bundle in bundles:
        assert bundle["status"] == "idle"
        assert bundle["scope"] == {"turn": 1}
        assert bundle["nodes"][0]["status"] != "running"
        assert bundle["nodes"][0]["outcome"] == "canceled (closed)"
        assert bundle["headline"].endswith("turn 1 · done")
    assert all("application/vnd.jupyter.widget-view+json" not in o.get("data", {}) for o in outputs)
    for output in outputs:  # what viewers without the extension show (GitHub, nbconvert) says it too
        for mime in ("text/plain", "text/html"):
            text = "".join(output["data"][mime])
            assert "canceled (closed)" in text and "turn 1 · done" in text, (mime, text[:300])
            assert "waiting for your approval" not in text
    ours = [e for e in errors.uncaught + errors.console if "nbagent" in e or "nba-" in e]
    assert ours == [], errors


SHUTDOWN_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()"


def test_a_kernel_shut_down_mid_turn_leaves_the_cell_saying_the_turns_end(lab: Lab, page: Any) -> None:
    name = lab.write_notebook("shutdown-mid-turn", [SETUP, "%followup go"])
    open_notebook(page, lab.lab_url(name, "shutdown-mid-turn"))
    run_cell(page, 0)
    run_cell(page, 1)
    cell(page, 1).locator('.nba-approval[data-state="pending"]').wait_for()
    page.evaluate(SHUTDOWN_JS)  # Kernel › Shut Down Kernel, without its dialog
    cell(page, 1).locator(".jp-nbagent-output").get_by_text("turn 1 · done").wait_for(timeout=60_000)
    cell(page, 1).get_by_text("canceled (closed)").first.wait_for()
    assert cell(page, 1).locator(".nba-approval").count() == 0
