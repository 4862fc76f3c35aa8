"""Going to a turn of a 3,000-turn session in its tab: turn 1 by its number in one action (not 150
"Show earlier turns" clicks), a turn found by its title with the keyboard, and from there the
pages after it up to the newest turns; titles from the log stay text."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Lab, shot
from lab_sessions import XSS, write_synthetic
from notebook_page import set_theme
from page_errors import PageErrors
from test_lab_a11y import low_contrast
from test_lab_tab_follow import open_tab
from test_lab_tab_restore import open_workspace

pytestmark = pytest.mark.browser

TURNS = 3000
WINDOW = 20  # labextension/src/tab.ts WINDOW_TURNS and PAGE_TURNS
TITLES = {7: "Where did the refunds go?", 1234: "Plot REFUNDS by region", 2100: XSS}

IN_VIEW_JS = """([tab, id]) => {
  const turn = tab.querySelector(`.nba-turn[data-id="${id}"]`);
  if (!turn) return false;
  // Its head in view, below the sticky "Go to turn" bar (not hidden under it).
  const t = turn.getBoundingClientRect(), v = tab.getBoundingClientRect();
  const bar = tab.querySelector('.jp-nbagent-jump').getBoundingClientRect();
  return t.top >= bar.bottom - 1 && t.top < v.bottom - 20;
}"""


def ids(tab: Any) -> list[str]:
    return tab.locator(".nba-turn").evaluate_all("els => els.map(e => e.dataset.id)")


def test_go_to_turn_one_and_find_a_turn_by_its_title(lab: Lab, page: Any) -> None:
    path = lab.root / "huge.nbagent.sqlite"
    sid, events = write_synthetic(path, TURNS, titles=TITLES)
    errors = PageErrors().watch(page)
    page.set_viewport_size({"width": 1280, "height": 700})
    open_workspace(page, lab, "jump")
    tab = open_tab(page, path.name, sid, "huge")
    page.wait_for_function(f"e => e.dataset.seq === '{events}'", arg=tab.element_handle())

    # Turn 1 by its number: one action.
    number = tab.get_by_label("Go to turn")
    number.fill("1")
    number.press("Enter")
    page.wait_for_function(IN_VIEW_JS, arg=[tab.element_handle(), "turn-1"])
    assert tab.locator('.nba-turn[data-id="turn-1"]').get_attribute("open") is not None
    assert ids(tab)[:WINDOW] == [f"turn-{n}" for n in range(1, WINDOW + 1)]
    assert tab.locator(".nba-turn").count() == 2 * WINDOW  # turn 1's window and the newest, not 3,000
    assert not tab.locator("button.jp-nbagent-earlier").is_visible()  # nothing before turn 1
    later = tab.locator("button.jp-nbagent-later")
    gap = TURNS - 2 * WINDOW
    assert later.inner_text() == f"Show {WINDOW} later turns ({gap:,} before turn {TURNS - WINDOW + 1})"
    shot(page, "tab-jump-turn-1")

    # Forwards from there: the next page lands below, the button moves on.
    later.click()
    tab.locator(f'.nba-turn[data-id="turn-{2 * WINDOW}"]').wait_for()
    assert ids(tab)[: 2 * WINDOW] == [f"turn-{n}" for n in range(1, 2 * WINDOW + 1)]
    assert tab.get_attribute("data-later") == str(gap - WINDOW)

    # A turn by its title, with the keyboard only: type, Enter, ↓ to the result, Enter.
    find = tab.get_by_role("searchbox", name="Find a turn by its title")
    find.fill("refunds")
    find.press("Enter")
    results = tab.locator(".jp-nbagent-jump-result")
    results.nth(1).wait_for()
    assert results.evaluate_all("els => els.map(e => e.textContent)") == [
        "Turn 7Where did the refunds go?",
        "Turn 1234Plot REFUNDS by region",
    ]
    assert tab.locator(".jp-nbagent-jump-status").inner_text() == "2 turns found"
    # Its words read at AA in both themes (measured in the page).
    jump_text = (
        ".jp-nbagent-jump :is(.jp-nbagent-jump-label, .jp-nbagent-jump-status, .jp-nbagent-jump-result)"
    )
    try:
        for theme in ("JupyterLab Dark", "JupyterLab Light"):
            set_theme(page, theme)
            page.wait_for_function(
                "light => (getComputedStyle(document.querySelector('.jp-nbagent-jump')).backgroundColor"
                " === 'rgb(255, 255, 255)') === light",
                arg="Light" in theme,
            )
            assert low_contrast(page, jump_text) == [], theme
            shot(page, f"tab-jump-search-{theme.split()[-1].lower()}", tab.locator(".jp-nbagent-jump"))
    finally:
        set_theme(page, "JupyterLab Light")
    find.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.dataset.turn") == "1234"
    shot(page, "tab-jump-search-results")
    page.keyboard.press("Enter")
    page.wait_for_function(IN_VIEW_JS, arg=[tab.element_handle(), "turn-1234"])
    turn = tab.locator('.nba-turn[data-id="turn-1234"]')
    assert "Plot REFUNDS by region" in turn.locator("summary").first.inner_text()
    assert ids(tab)[:WINDOW] == [f"turn-{n}" for n in range(1225, 1245)]  # the earlier pages made way
    assert tab.locator(".nba-turn").count() == 2 * WINDOW
    shot(page, "tab-jump-found-1234")

    # Both ways from the found turn: earlier pages above, later ones below, the newest still there.
    tab.locator("button.jp-nbagent-earlier").click()
    tab.locator('.nba-turn[data-id="turn-1205"]').wait_for()
    tab.locator("button.jp-nbagent-later").click()
    tab.locator('.nba-turn[data-id="turn-1264"]').wait_for()
    assert ids(tab)[: 3 * WINDOW] == [f"turn-{n}" for n in range(1205, 1265)]
    assert ids(tab)[-1] == f"turn-{TURNS}"

    # A title from the log is text: the crafted one is found and shown, and runs nothing.
    find.fill("onerror")
    find.press("Enter")
    crafted = tab.locator('.jp-nbagent-jump-result[data-turn="2100"]')
    crafted.wait_for()
    assert results.count() == 1 and "<img" in crafted.inner_text()
    crafted.click()
    page.wait_for_function(IN_VIEW_JS, arg=[tab.element_handle(), "turn-2100"])
    assert page.evaluate("() => window.__nbagent_xss") is None

    # A turn past the end says so, near the box.
    number.fill(str(TURNS + 1))
    number.press("Enter")
    status = tab.locator('.jp-nbagent-jump-status[data-state="error"]')
    status.wait_for()
    assert f"turn {TURNS + 1} is not in this session" in status.inner_text()
    find.fill("no such title")
    find.press("Enter")
    tab.locator('.jp-nbagent-jump-status[data-state="none"]').wait_for()
    assert (
        tab.locator(".jp-nbagent-jump-status").inner_text()
        == "no turn\u2019s title holds \u201cno such title\u201d"
    )
    assert errors.uncaught == [] and errors.console == [], errors
