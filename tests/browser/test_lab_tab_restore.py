"""Open session tabs survive a page reload: JupyterLab's layout restorer reopens them from the
workspace (the file, a path under the server root, and the session id), each showing its session."""

from __future__ import annotations

import json
import shutil
import urllib.request
from typing import Any

import pytest
from conftest import Lab, shot
from mcp_helpers import wait_until
from page_errors import PageErrors
from test_lab_tab_follow import open_tab, write

pytestmark = pytest.mark.browser

APP_READY_JS = "() => window.jupyterapp?.commands.hasCommand('nbagent:open-session')"


def open_workspace(page: Any, lab: Lab, workspace: str) -> None:
    page.goto(f"{lab.url}/lab/workspaces/{workspace}?token={lab.token}")
    page.wait_for_function(APP_READY_JS)
    page.evaluate("() => window.jupyterapp.restored")


def saved_tabs(lab: Lab, workspace: str) -> set[str]:
    """The session tabs the server's copy of ``workspace`` holds (what a reload restores)."""
    url = f"{lab.url}/lab/api/workspaces/{workspace}?token={lab.token}"
    with urllib.request.urlopen(url, timeout=10) as r:
        data = json.load(r)["data"]
    return {key.split(":", 1)[1] for key in data if key.startswith("nbagent-session:")}


def test_two_open_session_tabs_are_back_after_a_reload(lab: Lab, page: Any) -> None:
    first = lab.root / "restore-a.nbagent.sqlite"
    second = lab.root / "restore-b.nbagent.sqlite"
    sid_a = write(first, ["What is in the warehouse table?"])
    sid_b = write(second, ["Which month sold most?", "And the least?"])
    errors = PageErrors().watch(page)
    open_workspace(page, lab, "restore")
    open_tab(page, first.name, sid_a, "warehouse").locator('.nba-turn[data-id="turn-1"]').wait_for()
    open_tab(page, second.name, sid_b, "months").locator('.nba-turn[data-id="turn-2"]').wait_for()
    want = {f"{first.name}:{sid_a}", f"{second.name}:{sid_b}"}
    # The workspace is saved a moment after a change: wait until the server holds both tabs.
    wait_until(lambda: saved_tabs(lab, "restore") == want, timeout=60, what="the workspace holding both tabs")

    page.reload()
    page.wait_for_function(APP_READY_JS)
    for path, sid, turn in ((first, sid_a, "turn-1"), (second, sid_b, "turn-2")):
        tab = page.locator(f'.jp-nbagent-tab[data-session="{sid}"]')
        tab.locator(f'.nba-turn[data-id="{turn}"]').wait_for(state="attached")
        assert tab.get_attribute("data-file") == path.name
    labels = page.locator(".lm-TabBar-tab[data-id^='nbagent-session-'] .lm-TabBar-tabLabel").all_inner_texts()
    assert sorted(labels) == ["months", "warehouse"]
    shot(page, "tabs-restored-after-reload")
    assert errors.uncaught == [] and errors.console == [], errors


def test_a_copied_file_with_the_same_session_id_opens_in_its_own_tab(lab: Lab, page: Any) -> None:
    """``nbagent sessions copy`` keeps the session id: each file's session gets its own tab, and
    opening one again brings back that file's tab."""
    original = lab.root / "same-id.nbagent.sqlite"
    copy = lab.root / "same-id-copy.nbagent.sqlite"
    sid = write(original, ["Asked in both files"])
    shutil.copyfile(original, copy)
    write(copy, ["Asked in the copy only"], sid)
    errors = PageErrors().watch(page)
    open_workspace(page, lab, "same-id")
    open_tab(page, original.name, sid, "original")
    open_tab(page, copy.name, sid, "copy")
    tabs = {
        path.name: page.locator(f'.jp-nbagent-tab[data-session="{sid}"][data-file="{path.name}"]')
        for path in (original, copy)
    }
    tabs[copy.name].locator('.nba-turn[data-id="turn-2"]').wait_for()
    tabs[original.name].locator('.nba-turn[data-id="turn-1"]').wait_for(state="attached")
    assert tabs[original.name].locator('.nba-turn[data-id="turn-2"]').count() == 0  # its own file's log
    ids = page.locator(".jp-nbagent-session").evaluate_all("els => els.map(e => e.id)")
    assert sorted(ids) == [f"nbagent-session-{sid}", f"nbagent-session-{sid}-2"]
    open_tab(page, original.name, sid, "original")  # again: that file's tab comes forward, no third
    page.wait_for_function(
        "f => window.jupyterapp.shell.currentWidget.content.session?.file === f", arg=original.name
    )
    assert page.locator(".jp-nbagent-session").count() == 2
    shot(page, "tabs-same-session-id-two-files")
    assert errors.uncaught == [] and errors.console == [], errors
