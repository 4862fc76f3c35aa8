"""The Agent sessions panel in Notebook 7 (its left area, shown from the View menu), in Chromium:
the sessions beside the notebook are listed, and Markdown answers and the export work there too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import open_notebook
from page_errors import PageErrors
from test_lab_markdown import write_session

pytestmark = pytest.mark.browser


def test_notebook_7_shows_the_agent_sessions_panel_from_its_view_menu(lab: Lab, page: Any) -> None:
    sid = write_session(lab.root / "nb7.nbagent.sqlite")
    errors = PageErrors().watch(page)
    stacks: list[str] = []
    page.on("pageerror", lambda exc: stacks.append(exc.stack or str(exc)))
    open_notebook(page, lab.notebook7_url(lab.write_notebook("nb7-panel", [])))
    page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
    page.locator(".lm-Menu-itemLabel", has_text="Show Agent Sessions").click()
    panel = page.locator("#nbagent-sessions")
    row = panel.locator(f'.jp-nbagent-row[data-session="{sid}"]')
    row.wait_for()
    assert "1 turn" in row.locator(".jp-nbagent-row-meta").inner_text()
    shot(page, "notebook7-sessions-panel")
    with page.expect_download() as download:
        row.locator(".jp-nbagent-export").click()
    assert "Which city is warmest?" in Path(download.value.path()).read_text(encoding="utf-8")
    # Notebook 7.6 itself throws one error while loading its settings here ("reading 'schema'", in
    # notebook_core, with or without nbagent): only errors from nbagent's code fail this test.
    assert [s for s in stacks if "nbagent" in s] == [] and errors.console == [], (stacks, errors)
