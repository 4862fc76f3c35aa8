"""A long session's tab holds a bounded DOM: its newest turns (a window the server folds without
reading the whole log), the first pending items of each queue, and earlier turns a page at a time
from a "Show earlier turns" button that the keyboard reaches."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Lab, shot
from lab_sessions import write_synthetic
from page_errors import PageErrors
from test_lab_tab_follow import AT_END_JS, open_tab
from test_lab_tab_restore import open_workspace

pytestmark = pytest.mark.browser

TURNS = 3000
PENDING = 5200
WINDOW = 20  # labextension/src/tab.ts WINDOW_TURNS and PAGE_TURNS


def test_thousands_of_turns_and_pending_items_keep_a_bounded_dom(lab: Lab, page: Any) -> None:
    path = lab.root / "huge.nbagent.sqlite"
    sid, events = write_synthetic(path, TURNS, PENDING)
    errors = PageErrors().watch(page)
    page.set_viewport_size({"width": 1280, "height": 700})
    open_workspace(page, lab, "windows")
    tab = open_tab(page, path.name, sid, "huge")
    tab.locator(f'.nba-turn[data-id="turn-{TURNS}"]').wait_for()
    page.wait_for_function(f"e => e.dataset.seq === '{events}'", arg=tab.element_handle())
    # The newest turns, at the end of the view; the whole session's figures in the head.
    page.wait_for_function(f"e => ({AT_END_JS})(e)", arg=tab.element_handle())
    assert tab.locator(".nba-turn").count() == WINDOW
    assert tab.locator(".nba-turn").first.get_attribute("data-id") == f"turn-{TURNS - WINDOW + 1}"
    assert tab.locator(".nba-head .nba-muted").inner_text().startswith(f"{TURNS} turns · {events} events")
    queue = tab.locator('.nba-pending [data-queue="next-step"]')
    assert queue.locator(".nba-inbox-item").count() == 200
    assert queue.locator(".nba-inbox-item").first.locator(".nba-label").inner_text() == "n0"
    assert tab.locator(".nba-item, .nba-mark, .nba-step").count() < 600  # not 3,000 turns' worth
    earlier = tab.locator("button.jp-nbagent-earlier")
    before = TURNS - WINDOW + 1
    assert earlier.inner_text() == f"Show {WINDOW} earlier turns ({before - 1:,} before turn {before})"
    shot(page, "tab-window-newest")

    # A click brings the page before, above, without moving what the user was reading.
    page.locator(".jp-nbagent-session .jp-Toolbar").get_by_text("Top").click()
    page.wait_for_function("e => e.scrollTop === 0", arg=tab.element_handle())
    anchor = tab.locator(f'.nba-turn[data-id="turn-{before}"]')
    y = anchor.bounding_box()["y"]
    earlier.click()
    tab.locator(f'.nba-turn[data-id="turn-{before - WINDOW}"]').wait_for()
    assert tab.locator(".nba-turn").count() == 2 * WINDOW
    assert abs(anchor.bounding_box()["y"] - y) < 2
    ids = tab.locator(".nba-turn").evaluate_all("els => els.map(e => e.dataset.id)")
    assert ids == [f"turn-{n}" for n in range(before - WINDOW, TURNS + 1)]

    # The keyboard reaches it too; an earlier turn opens to its messages.
    earlier.focus()
    page.keyboard.press("Enter")
    tab.locator(f'.nba-turn[data-id="turn-{before - 2 * WINDOW}"]').wait_for()
    assert tab.locator(".nba-turn").count() == 3 * WINDOW
    old = tab.locator(f'.nba-turn[data-id="turn-{before - 2 * WINDOW}"]')
    old.locator("summary").first.click()
    old.locator(".nba-msg").first.wait_for()
    assert "Summarize the columns" in old.locator(".nba-msg").first.inner_text()

    assert tab.get_attribute("data-earlier") == f"{before - 2 * WINDOW - 1}"
    assert errors.uncaught == [] and errors.console == [], errors
