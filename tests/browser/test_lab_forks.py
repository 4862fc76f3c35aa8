"""Lineage in the lab extension: the Agent sessions panel nests a fork under its parent, and the
fork's tab says where it was forked, with a link that opens the parent's tab."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import Lab, shot
from lab_sessions import write_family
from page_errors import PageErrors
from test_lab_tab_follow import open_tab
from test_lab_tab_restore import open_workspace

pytestmark = pytest.mark.browser


async def _fork_to(src: Path, parent: str, dest: Path) -> None:
    import nbagent

    child = nbagent.fork_session(src, parent, before_turn=3, to=dest, new_session_id="far-child")
    await child.close()


def test_the_panel_nests_a_fork_and_its_tab_links_back_to_the_parent(lab: Lab, page: Any) -> None:
    (lab.root / "lineage").mkdir()
    path = lab.root / "lineage" / "what-if.nbagent.sqlite"
    parent, child = write_family(path)
    errors = PageErrors().watch(page)
    open_workspace(page, lab, "forks")
    page.evaluate(
        "() => window.jupyterapp.commands.execute('filebrowser:go-to-path', {path: 'lineage', dontShowBrowser: true})"
    )
    page.evaluate("() => window.jupyterapp.commands.execute('nbagent:show-sessions')")
    panel = page.locator('.jp-nbagent-panel[data-folder="lineage"][data-count="2"]')
    panel.wait_for()
    # The fork is listed once, inside its parent's row, and says it is a fork.
    top = panel.locator(":scope > .jp-nbagent-list > .jp-nbagent-row")
    assert [top.nth(i).get_attribute("data-session") for i in range(top.count())] == [parent]
    nested = top.locator(".jp-nbagent-forks > .jp-nbagent-row")
    assert nested.count() == 1 and nested.get_attribute("data-session") == child
    assert nested.locator(".jp-nbagent-row-meta").inner_text().startswith("fork · 3 turns")
    shot(page, "panel-fork-nested", panel)

    # Enter on the nested row opens the fork (not its parent as well).
    nested.focus()
    page.keyboard.press("Enter")
    tab = page.locator(f'.jp-nbagent-tab[data-session="{child}"]')
    line = tab.locator(".jp-nbagent-tab-fork")
    line.wait_for()
    assert line.inner_text() == "forked from Where do sales come from? before turn 2"
    assert page.locator(f'.jp-nbagent-tab[data-session="{parent}"]').count() == 0
    shot(page, "fork-tab-header")

    line.locator("button.jp-nbagent-link").click()
    parent_tab = page.locator(f'.jp-nbagent-tab[data-session="{parent}"]')
    parent_tab.locator('.nba-turn[data-id="turn-3"]').wait_for()
    assert parent_tab.is_visible() and not tab.is_visible()
    assert parent_tab.locator(".jp-nbagent-tab-fork").is_hidden()
    assert errors.uncaught == [] and errors.console == [], errors


def test_a_fork_whose_parent_lives_elsewhere_names_it_without_a_link(lab: Lab, page: Any) -> None:
    src = lab.root / "origin.nbagent.sqlite"
    parent, _ = write_family(src)
    dest = lab.root / "elsewhere.nbagent.sqlite"
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _fork_to(src, parent, dest)).result()
    open_workspace(page, lab, "forks-far")
    tab = open_tab(page, dest.name, "far-child", "far")
    line = tab.locator(".jp-nbagent-tab-fork")
    line.wait_for()
    assert line.inner_text() == f"forked from session {parent} before turn 3 (not in this file)"
    assert line.locator("button").count() == 0
