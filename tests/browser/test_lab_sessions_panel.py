"""The "Agent sessions" panel and the session tab in Debian's Chromium: two notebooks' sessions
listed, one opened read-only, a live turn from another kernel followed, Markdown exported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM, Lab, shot, start_lab
from lab_sessions import XSS, write_session
from notebook_page import open_notebook, run_cell

XSS_RAN_JS = "() => window.__nbagent_xss === undefined ? null : window.__nbagent_xss"
SHOW_PANEL_JS = """() => {
  window.jupyterapp.commands.execute('nbagent:show-sessions');
  const panel = document.getElementById('nbagent-sessions');
  return panel !== null && panel.offsetParent !== null;
}"""


def show_panel(page: Any) -> None:
    """Show the Agent sessions panel once the workspace's own restoring is done (a restore that
    ends later puts the file browser back in the side bar), and again until it shows."""
    page.wait_for_function("() => window.jupyterapp?.commands.hasCommand('nbagent:show-sessions')")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    page.wait_for_function(SHOW_PANEL_JS, polling=250)


@pytest.fixture(scope="module")
def plain_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with start_lab(tmp_path_factory.mktemp("panel-lab"), save_widget_state=False) as server:
        yield server


def notebook(lab: Lab, rel: str, cells: list[str]) -> str:
    """Write a notebook at ``rel`` (under the server root) and return its path."""
    path = lab.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    name = lab.write_notebook(Path(rel).stem, cells)
    (lab.root / name).rename(path)
    return rel


def test_the_panel_lists_two_notebooks_sessions_opens_one_follows_a_live_turn_and_exports(
    plain_lab: Lab, browser: Any, tmp_path: Path
) -> None:
    # Notebook alpha ran earlier: its session file lies beside it (with a hostile first prompt).
    notebook(plain_lab, "proj/alpha.ipynb", ["%load_ext nbagent"])
    alpha_prompt = f"Alpha question {XSS}"
    alpha = write_session(plain_lab.root / "proj" / "alpha.nbagent.sqlite", [alpha_prompt], context=XSS)
    # Notebook beta runs now, in its own kernel, in its own page.
    beta_nb = notebook(
        plain_lab,
        "proj/beta.ipynb",
        [
            "%load_ext nbagent",
            "%%inject --label units\nPrices are in EUR.",
            "%followup --wait First beta question",
            "%followup --wait Second beta question",
        ],
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    kernel_page = context.new_page()
    panel_page = context.new_page()
    try:
        open_notebook(kernel_page, plain_lab.lab_url(beta_nb, "beta-kernel"))
        for i in range(3):
            run_cell(kernel_page, i)

        panel_page.goto(f"{plain_lab.url}/lab/workspaces/panel?token={plain_lab.token}")
        panel_page.wait_for_function("() => window.jupyterapp?.commands.hasCommand('filebrowser:go-to-path')")
        panel_page.evaluate(
            """async () => { await window.jupyterapp.restored;
            await window.jupyterapp.commands.execute('filebrowser:go-to-path', {path: 'proj', dontShowBrowser: true}); }"""
        )
        show_panel(panel_page)
        panel = panel_page.locator('.jp-nbagent-panel[data-folder="proj"][data-count="2"]')
        panel.wait_for()
        rows = panel.locator(".jp-nbagent-row")
        files = rows.evaluate_all("els => els.map(e => e.dataset.file)")
        assert files == ["proj/beta.nbagent.sqlite", "proj/alpha.nbagent.sqlite"]  # newest first
        beta_row = rows.nth(0)
        assert beta_row.locator(".jp-nbagent-row-label").inner_text() == "First beta question"
        assert beta_row.locator(".jp-nbagent-row-meta").inner_text().startswith("1 turn · ")
        assert "echo" in beta_row.locator(".jp-nbagent-row-meta").inner_text()
        alpha_row = rows.nth(1)
        assert alpha_row.get_attribute("data-session") == alpha
        assert alpha_row.locator(".jp-nbagent-row-label").inner_text() == alpha_prompt
        assert panel_page.evaluate(XSS_RAN_JS) is None
        assert panel.locator('img[src="x"], script').count() == 0
        shot(panel_page, "lab-05-sessions-panel")

        # Open beta's session: a read-only tab with its timeline.
        beta_row.locator(".jp-nbagent-open").click()
        tab = panel_page.locator(".jp-nbagent-tab")
        tab.locator('.nba-turn[data-id="turn-1"][data-status="completed"]').wait_for()
        kinds = tab.locator(".nba-msg").evaluate_all("els => els.map(e => e.dataset.kind)")
        assert kinds == ["cell", "user"]
        seq_before = int(tab.get_attribute("data-seq") or 0)

        # Another kernel writes a turn: the open tab follows it.
        run_cell(kernel_page, 3)
        turn2 = tab.locator('.nba-turn[data-id="turn-2"][data-status="completed"]')
        turn2.wait_for()
        assert "Second beta question" in turn2.inner_text()
        assert int(tab.get_attribute("data-seq") or 0) > seq_before
        # The panel, still shown beside the tab, refreshed by itself: the file browser's own polling
        # noticed the other kernel's writes to the folder's session files.
        beta_meta = '.jp-nbagent-row[data-file="proj/beta.nbagent.sqlite"] .jp-nbagent-row-meta'
        panel_page.locator(beta_meta, has_text="2 turns").wait_for()
        shot(panel_page, "lab-06-session-tab-following")

        # Export the transcript as Markdown from the tab's toolbar.
        with panel_page.expect_download() as download:
            panel_page.locator(".jp-nbagent-session .jp-Toolbar").get_by_text("Export Markdown").click()
        md = Path(download.value.path()).read_text(encoding="utf-8")
        assert download.value.suggested_filename.startswith(
            "beta-"
        ) and download.value.suggested_filename.endswith(".md")
        assert "> First beta question" in md and "> Second beta question" in md  # typed prompts, quoted
        assert "📎" in md and "Prices are in EUR." in md  # the injected context, marked apart
        (tmp_path / "beta.md").write_text(md, encoding="utf-8")

        # And alpha's from its row in the panel: hostile text stays text in the Markdown.
        show_panel(panel_page)
        with panel_page.expect_download() as download:
            alpha_row.locator(".jp-nbagent-export").click()
        md = Path(download.value.path()).read_text(encoding="utf-8")
        assert XSS in md and md.startswith("# Alpha question")
        assert panel_page.evaluate(XSS_RAN_JS) is None

        # And on demand.
        panel_page.evaluate("() => { document.getElementById('nbagent-sessions').dataset.state = 'stale'; }")
        panel_page.locator(".jp-nbagent-refresh").click()
        panel_page.locator('.jp-nbagent-panel[data-state="ready"]').wait_for()
        assert panel_page.locator(beta_meta).inner_text().startswith("2 turns · ")
        shot(panel_page, "lab-07-sessions-panel-refreshed")
    finally:
        context.close()
    assert json.loads((plain_lab.root / beta_nb).read_text())["cells"]  # the notebook was left intact
