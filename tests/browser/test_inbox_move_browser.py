"""Moving a pending item in the inbox widget (agent.inbox.move, SPEC §11.1): dragged to another
place or queue, or from the keyboard (Alt+ArrowUp/Down on its row, its button to the other queue);
the kernel's inbox follows and the keyboard focus stays on the moved item."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import open_notebook, output_text, run_cell, setup_cell
from page_errors import PageErrors

pytestmark = pytest.mark.browser

ORDER_JS = """root => Object.fromEntries([...root.querySelectorAll('.nba-queue')].map(q =>
  [q.dataset.queue, [...q.querySelectorAll('.nba-inbox-item .nba-label')].map(l => l.textContent)]))"""
FOCUSED_JS = """() => { const a = document.activeElement; const i = a.closest('.nba-inbox-item');
  return [a.tagName, i ? i.querySelector('.nba-label').textContent : null]; }"""


def test_drag_and_keyboard_move_pending_items_between_places_and_queues(lab: Lab, page: Any) -> None:
    cells = [
        setup_cell("move", "[]"),
        "for note in ('one', 'two', 'three'):\n    agent.inject(cell_text(note, label=note))",
        "print([m.source['label'] for m in agent.inbox.next_step], [m.source['label'] for m in agent.inbox.next_turn])",
    ]
    errors = PageErrors().watch(page)
    open_notebook(page, lab.lab_url(lab.write_notebook("move", cells), "move"))
    run_cell(page, 0)
    run_cell(page, 1)
    inbox = page.locator('.nba-inbox[data-live="true"][data-pending="3"]')
    inbox.wait_for()
    order = lambda: inbox.evaluate(ORDER_JS)  # noqa: E731
    assert order() == {"next-step": ["one", "two", "three"], "next-turn": []}
    item = lambda label: inbox.locator(".nba-inbox-item", has=page.locator(".nba-label", has_text=label))  # noqa: E731

    # Drag "three" onto the top half of "one": first in its queue.
    item("three").locator("summary").drag_to(
        item("one").locator("summary"), target_position={"x": 40, "y": 2}
    )
    page.wait_for_function(
        f"() => JSON.stringify(({ORDER_JS})(document.querySelector('.nba-inbox'))['next-step']) === '[\"three\",\"one\",\"two\"]'"
    )
    # Drag "one" to the other queue (empty so far).
    item("one").locator("summary").drag_to(inbox.locator('[data-queue="next-turn"]'))
    page.wait_for_function(
        "() => document.querySelector('.nba-queue[data-queue=\"next-turn\"] .nba-inbox-item')"
    )
    assert order() == {"next-step": ["three", "two"], "next-turn": ["one"]}
    shot(page, "inbox-move-01-dragged", inbox)

    # Keyboard: Alt+ArrowUp on "two" puts it first; the focus stays on it.
    item("two").locator("summary").focus()
    page.keyboard.press("Alt+ArrowUp")
    page.wait_for_function(
        "() => document.querySelector('.nba-queue[data-queue=\"next-step\"] .nba-label').textContent === 'two'"
    )
    assert order() == {"next-step": ["two", "three"], "next-turn": ["one"]}
    assert page.evaluate(FOCUSED_JS) == ["SUMMARY", "two"]
    # Its button moves it to the end of the other queue.
    item("three").locator(".nba-move").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelectorAll('.nba-queue[data-queue=\"next-turn\"] .nba-inbox-item').length === 2"
    )
    assert order() == {"next-step": ["two"], "next-turn": ["one", "three"]}
    assert page.evaluate(FOCUSED_JS) == ["SUMMARY", "three"]
    shot(page, "inbox-move-02-keyboard", inbox)

    run_cell(page, 2)  # the kernel's inbox is what the widget shows
    assert "['two'] ['one', 'three']" in output_text(page, 2)
    assert errors.uncaught == [] and errors.console == [], errors
