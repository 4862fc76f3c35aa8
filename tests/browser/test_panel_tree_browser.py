"""The Agent sessions panel as a tree (issue 35 item 2; SPEC §11.3 nests forks): one Tab stop with a
roving tabindex, ↑/↓ move, →/← open and close a session's forks (or move to the first fork / the
parent), Enter opens; an unnamed fork is named by its last replay. In Notebook 7, whose pages have
no main area for a tab, Enter opens the session in the page's right area, and it shows there."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Lab, shot
from fork_story import write_fork
from notebook_page import open_notebook
from page_errors import PageErrors
from test_lab_sessions_panel import show_panel

pytestmark = pytest.mark.browser

FOCUSED = "() => document.activeElement.dataset.session || document.activeElement.tagName"
STOPS = """() => [...document.querySelectorAll('#nbagent-sessions [role=tree] [tabindex="0"], #nbagent-sessions [role=tree] button:not([tabindex="-1"])')]
  .map(e => e.dataset.session || e.tagName)"""


@pytest.mark.parametrize("where", ["lab", "notebook7"])
def test_the_panel_is_a_tree_the_keyboard_walks_and_enter_opens(lab: Lab, page: Any, where: str) -> None:
    parent, fork = write_fork(lab.root / f"tree-{where}.nbagent.sqlite")
    name = lab.write_notebook(f"tree-{where}", [])
    errors = PageErrors().watch(page)
    stacks: list[str] = []
    page.on("pageerror", lambda exc: stacks.append(exc.stack or str(exc)))
    open_notebook(page, lab.lab_url(name, f"tree-{where}") if where == "lab" else lab.notebook7_url(name))
    show_panel(page)
    panel = page.locator("#nbagent-sessions")
    tree = panel.locator('[role="tree"]')
    top = tree.locator(f':scope > [role="treeitem"][data-session="{parent}"]')
    top.wait_for()
    child = top.locator(f'[role="group"] > [role="treeitem"][data-session="{fork}"]')
    assert top.get_attribute("aria-expanded") == "true" and child.get_attribute("aria-level") == "2"
    assert child.locator(".jp-nbagent-row-label").inner_text().startswith("replay of turn 1: ")
    stops = page.evaluate(STOPS)  # one Tab stop in the tree (the first row); no button is a stop
    assert len(stops) == 1 and "BUTTON" not in stops, stops

    top.focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate(FOCUSED) == fork and page.evaluate(STOPS) == [fork]
    page.keyboard.press("ArrowLeft")  # a fork without forks: to its parent
    assert page.evaluate(FOCUSED) == parent
    page.keyboard.press("ArrowLeft")  # closes the parent's forks
    assert top.get_attribute("aria-expanded") == "false" and child.is_hidden()
    page.keyboard.press("ArrowRight")  # opens them
    assert top.get_attribute("aria-expanded") == "true" and child.is_visible()
    page.keyboard.press("ArrowRight")  # to the first fork
    assert page.evaluate(FOCUSED) == fork
    shot(page, f"panel-tree-{where}", panel)
    page.keyboard.press("Enter")
    tab = page.locator(f'.jp-nbagent-tab[data-session="{fork}"]')
    tab.locator(".nba-turn").first.wait_for()
    assert tab.is_visible()
    area = page.evaluate(
        f"""() => {{ const s = window.jupyterapp.shell;
          for (const a of ['main', 'right']) for (const w of s.widgets(a)) if (w.id.startsWith('nbagent-session-{fork}')) return a;
          return null; }}"""
    )
    assert area == ("main" if where == "lab" else "right")
    shot(page, f"panel-open-{where}")
    assert [s for s in stacks if "nbagent" in s] == [] and errors.console == [], (stacks, errors)
