"""Run All on every tutorial in a real JupyterLab, in Debian's Chromium: the Run menu's "Run All Cells"
sends every cell at once; each must finish with an execution count and no error output."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_MS, Lab, shot
from notebook_page import open_notebook
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TUTORIALS = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))

CELLS_JS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  return cells.filter((c) => c.model.type === "code").map((c) => {
    const outputs = [];
    for (let i = 0; i < c.model.outputs.length; i++) outputs.push(c.model.outputs.get(i).type);
    return { count: c.model.executionCount, outputs };
  });
}"""

ALL_DONE_JS = """() => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.filter((c) => c.model.type === "code");
  return kernel && kernel.status === "idle" && cells.every((c) => c.model.executionCount !== null);
}"""


def click_run_all(page: Any) -> None:
    """Run → Run All Cells, clicked in the menu bar as a user would."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


@pytest.mark.parametrize("name", TUTORIALS)
def test_run_all_on_each_tutorial_gives_every_cell_a_count_and_no_error(
    lab: Lab, page: Any, name: str
) -> None:
    # The notebook with the files it ships beside (a cassette, an MCP server), as a user has the folder.
    for path in [
        NOTEBOOKS / f"{name}.ipynb",
        *(p for p in NOTEBOOKS.iterdir() if p.suffix not in (".ipynb", "")),
    ]:
        shutil.copy(path, lab.root / path.name)
    open_notebook(page, lab.lab_url(f"{name}.ipynb", f"run-all-{name}"))
    click_run_all(page)
    page.wait_for_function(ALL_DONE_JS, timeout=120_000, polling=250)
    cells = page.evaluate(CELLS_JS)
    counts = [c["count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1))  # one kernel, every cell once, in order
    assert [i for i, c in enumerate(cells) if "error" in c["outputs"]] == []
    shot(page, f"run-all-{name}-end")
    if name == "debugging-turn-order":
        followup = page.locator(".jp-CodeCell", has_text="%followup What is a?").first
        followup.scroll_into_view_if_needed()
        output = followup.locator(".jp-OutputArea")
        # a notebook renders the cells it scrolls to lazily: wait for the painted output
        expect(output).to_contain_text("turn 1 · done", timeout=WAIT_MS)
        expect(output).to_contain_text("the service was slow today", timeout=WAIT_MS)
        shot(page, "run-all-debugging-followup-cell", followup)
