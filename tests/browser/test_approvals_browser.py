"""Approval prompts in a real JupyterLab, in Debian's Chromium: Approve, Deny and "allow for this
session" clicked in the cell whose turn asked, both after the cell returned and while a ``--wait``
cell blocks the kernel."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import READY_JS, open_notebook, output_text, run_cell, run_cell_async, save, set_theme
from page_errors import PageErrors

pytestmark = pytest.mark.browser


def setup(codes: list[str]) -> str:
    """The first cell: the extension and a scripted model asking to run each code in turn."""
    steps = ", ".join(
        f"Response(tool_calls=[ToolCall('run_code', {{'code': {code!r}}}, id='c{i}')])"
        for i, code in enumerate(codes)
    )
    return f"""\
%load_ext nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
current_agent().set_model(ScriptedModel([{steps}, Response("done")]))"""


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def pending_prompt(page: Any, index: int, code: str) -> Any:
    """The live prompt in cell ``index`` asking to run ``code`` (waits for it)."""
    prompt = cell(page, index).locator('.nba-approval[data-state="pending"]')
    prompt = prompt.filter(has=page.locator(".nba-approval-code").get_by_text(code, exact=True))
    prompt.wait_for()  # an earlier question's prompt may still be on screen for a moment
    return prompt


def records(page: Any, index: int, count: int) -> list[str]:
    """The decided prompts' states in cell ``index``, once ``count`` are there."""
    decided = cell(page, index).locator('.nba-approval:not([data-state="pending"])')
    decided.nth(count - 1).wait_for()
    return [str(s) for s in decided.evaluate_all("els => els.map(e => e.dataset.state)")]


def decided(page: Any, index: int, count: int) -> list[str]:
    """Once the cell's turn is done: its output is the turn's timeline bundle, painted, whose approval
    marks say each decision in the cell's words; their outcomes, once ``count`` are there."""
    marks = cell(page, index).locator(
        '.jp-nbagent-output .nba-mark[data-mark="approval"]:not([data-outcome="asked"])'
    )
    marks.nth(count - 1).wait_for()
    return [str(s) for s in marks.evaluate_all("els => els.map(e => e.dataset.outcome)")]


def test_approve_and_deny_clicked_under_a_finished_followup_cell(lab: Lab, page: Any) -> None:
    name = lab.write_notebook(
        "approve-click",
        [
            setup(["approved = 1", "denied = 1"]),
            "%followup go",
            "print(sorted(k for k in ('approved', 'denied') if k in globals()))",
            "%agent show",
        ],
    )
    open_notebook(page, lab.lab_url(name, "approve-click"))
    run_cell(page, 0)
    run_cell(page, 1)  # returns at once; the turn runs on

    prompt = pending_prompt(page, 1, "approved = 1")
    assert prompt.locator("button").all_inner_texts() == [
        "Approve",
        "Deny",
        "Allow run_code for this session",
    ]
    shot(page, "approvals-01-pending-prompt", cell(page, 1))
    prompt.locator('button[data-action="approve"]').click()

    prompt = pending_prompt(page, 1, "denied = 1")
    assert records(page, 1, 1) == ["allowed-once"]  # the cell's earlier decision stays in view
    shot(page, "approvals-02-second-question", cell(page, 1))
    prompt.locator('button[data-action="deny"]').click()
    assert decided(page, 1, 2) == ["allowed-once", "rejected"]
    cell(page, 1).get_by_text("turn 1 · done").wait_for()
    text = output_text(page, 1)
    assert "run_code approved (clicked in the notebook)" in text
    assert "run_code denied (clicked in the notebook)" in text
    assert "Error: the user did not approve this call (rejected)" in text
    shot(page, "approvals-03-approved-and-denied", cell(page, 1))

    run_cell(page, 2)
    cell(page, 2).get_by_text("['approved']").wait_for()

    run_cell(page, 3)  # the timeline tells the same story, approvals included
    timeline = cell(page, 3).locator(".nba-timeline")
    timeline.get_by_text("run_code", exact=False).first.wait_for()
    shot(page, "approvals-06-timeline", timeline)


def test_clicks_work_while_a_wait_cell_blocks_the_kernel(lab: Lab, page: Any) -> None:
    codes = ["first = 1", "second = 1", "third = 1", "fourth = 1"]
    name = lab.write_notebook(
        "approve-wait",
        [
            setup(codes),
            "%followup --wait go",
            "print(sorted(k for k in ('first', 'second', 'third', 'fourth') if k in globals()))",
        ],
    )
    open_notebook(page, lab.lab_url(name, "approve-wait"))
    set_theme(page, "JupyterLab Dark")
    run_cell(page, 0)
    run_cell_async(page, 1)  # the cell blocks until the run ends

    prompt = pending_prompt(page, 1, "first = 1")
    shot(page, "approvals-04-pending-during-wait-dark", cell(page, 1))
    prompt.locator('button[data-action="approve"]').click()
    pending_prompt(page, 1, "second = 1").locator('button[data-action="deny"]').click()
    pending_prompt(page, 1, "third = 1").locator('button[data-action="session"]').click()
    assert decided(page, 1, 4) == ["allowed-once", "rejected", "allowed-session", "allowed-session"]
    cell(page, 1).get_by_text("turn 1 · done").wait_for()
    text = output_text(page, 1)
    assert "run_code approved (clicked in the notebook, and for the rest of the session)" in text
    assert "run_code approved (allowed for this session)" in text  # the fourth call did not ask
    shot(page, "approvals-05-decided-during-wait-dark", cell(page, 1))

    run_cell(page, 2)
    cell(page, 2).get_by_text("['first', 'fourth', 'third']").wait_for()


RESTART_JS = """async () => {
  await window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart();
}"""


def test_a_prompt_whose_kernel_restarted_shows_the_turns_end_and_offers_nothing_to_click(
    lab: Lab, page: Any
) -> None:
    """The old kernel closed its agent: the prompt gives way to the turn's end as the log has it
    (issue #32 item 12; tests/browser/test_restart_browser.py checks the saved file)."""
    errors = PageErrors().watch(page)
    name = lab.write_notebook("approve-restart", [setup(["never = 1"]), "%followup go"])
    open_notebook(page, lab.lab_url(name, "approve-restart"))
    run_cell(page, 0)
    run_cell(page, 1)
    prompt = pending_prompt(page, 1, "never = 1")
    assert prompt.locator("button").count() == 3

    page.evaluate(RESTART_JS)  # what Kernel › Restart Kernel does, without its dialog
    page.wait_for_function(READY_JS, timeout=90_000, polling=200)
    cell(page, 1).locator(".jp-nbagent-output").get_by_text("turn 1 · done").wait_for()
    cell(page, 1).get_by_text("run_code: canceled with the turn").wait_for()
    assert cell(page, 1).locator(".nba-approval").count() == 0
    assert cell(page, 1).locator(".nba-approvals button, button[data-action]").count() == 0
    shot(page, "approvals-07-kernel-gone", cell(page, 1))
    ours = [
        e for e in errors.uncaught + errors.console if "Cannot send" in e or "nbagent" in e or "nba-" in e
    ]
    assert ours == [], errors


TIMELINE_MIME = "application/vnd.nbagent.timeline+json"


def test_a_saved_approval_cell_keeps_its_view_when_reopened_untrusted(lab: Lab, page: Any) -> None:
    errors = PageErrors().watch(page)
    name = lab.write_notebook("approve-saved", [setup(["kept = 1"]), "%followup go"])
    open_notebook(page, lab.lab_url(name, "approve-saved"))
    run_cell(page, 0)
    run_cell(page, 1)
    pending_prompt(page, 1, "kept = 1").locator('button[data-action="session"]').click()
    assert decided(page, 1, 1) == ["allowed-session"]
    cell(page, 1).get_by_text("turn 1 · done").wait_for()
    save(page)
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000, polling=200
    )

    saved = json.loads((lab.root / name).read_text())
    (output,) = saved["cells"][1]["outputs"]
    assert {TIMELINE_MIME, "text/html", "text/plain"} <= set(output["data"])
    (mark,) = [n for n in output["data"][TIMELINE_MIME]["nodes"] if n["type"] == "approval"]
    said = "run_code approved (clicked in the notebook, and for the rest of the session)"
    assert mark["text"] == said
    plain = "".join(output["data"]["text/plain"])
    assert said in plain and "kept = 1" in plain

    saved["metadata"]["reopened"] = True  # another content: its signature no longer matches (untrusted)
    copy = "approve-saved-untrusted.ipynb"
    (lab.root / copy).write_text(json.dumps(saved))
    open_notebook(page, lab.lab_url(copy, "approve-saved-untrusted"))
    trusted = page.evaluate(
        "() => [...window.jupyterapp.shell.currentWidget.content.model.cells].map(c => c.trusted)"
    )
    assert trusted == [False, False]
    painted = cell(page, 1).locator('.jp-nbagent-output .nba-mark[data-mark="approval"]')
    painted.wait_for()
    assert painted.inner_text() == said
    assert "turn 1 · done" in output_text(page, 1)
    shot(page, "approvals-08-saved-untrusted", cell(page, 1))
    assert errors.uncaught == [], errors


ACTIVE_CELL_JS = """() => {
  const c = document.activeElement && document.activeElement.closest('.jp-Notebook .jp-Cell');
  return c ? [...document.querySelectorAll('.jp-Notebook .jp-Cell')].indexOf(c) : -1;
}"""
FOCUS_JS = """() => { const a = document.activeElement;
  return { tag: a.tagName, inPrompt: !!a.closest('.nba-approvals'), action: a.dataset.action ?? null,
           cls: a.className }; }"""


def test_a_prompt_is_announced_without_taking_focus_and_a_decision_keeps_focus_in_it(
    lab: Lab, page: Any
) -> None:
    """Issue #35 item 2: a new prompt is announced to screen readers (a polite live region) while the
    cell being edited keeps focus; after a decision from the keyboard focus stays in the prompt's
    region (it fell to <body> before)."""
    errors = PageErrors().watch(page)
    name = lab.write_notebook(
        "approve-focus", [setup(["one = 1", "two = 2"]), "%followup --wait go", "note = 'editing here'"]
    )
    open_notebook(page, lab.lab_url(name, "approve-focus"))
    run_cell(page, 0)
    run_cell_async(page, 1)
    editor = cell(page, 2).locator(".cm-content")
    editor.click()
    page.keyboard.type("  # typed while the agent runs")
    pending_prompt(page, 1, "one = 1")
    live = cell(page, 1).locator('.nba-sr-only[aria-live="polite"]')
    live.filter(has_text="Approval needed: run_code in turn 1 wants to run code").wait_for(state="attached")
    assert page.evaluate(ACTIVE_CELL_JS) == 2  # the editor kept focus: the prompt took nothing
    assert "typed while the agent runs" in cell(page, 2).inner_text()
    # The user leaves the editor (command mode), then answers from the keyboard: JupyterLab would
    # otherwise give focus back to that editor when the first prompt goes, and a prompt never takes
    # focus from an editor.
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.activeElement.closest('.cm-editor')")

    approve = cell(page, 1).locator('.nba-approval[data-state="pending"] button[data-action="approve"]')
    approve.focus()
    page.keyboard.press("Enter")
    prompt = pending_prompt(page, 1, "two = 2")  # the model asks again: a new prompt widget
    # The new prompt takes focus back once it is in the page (the one before it held it).
    page.wait_for_function("() => !!document.activeElement.closest('.nba-approvals')")
    focus = page.evaluate(FOCUS_JS)
    assert focus["inPrompt"] and focus["tag"] != "BODY", focus
    assert focus["action"] == "approve", focus  # on the new question's first button
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUS_JS)["action"] == "deny"
    page.keyboard.press("Enter")
    assert decided(page, 1, 2) == ["allowed-once", "rejected"]
    # The turn ended and its output replaced the prompt: focus is back on the notebook, not <body>.
    page.wait_for_function("() => document.activeElement !== document.body")
    assert page.evaluate("() => !!document.activeElement.closest('.jp-Notebook')")
    assert prompt.count() == 0
    shot(page, "approvals-08-keyboard-focus-kept", cell(page, 1))
    assert [e for e in errors.console if "nbagent" in e or "nba-" in e] == [], errors


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_a_notebook_saved_with_a_pending_prompt_carries_no_widget_code(lab: Lab, page: Any) -> None:
    """This lab saves widget state ("Save Widget State Automatically" on). A pending prompt's model
    (its `_esm` module, the turn view's `context_html`) and every other nbagent model stay out of
    it: a notebook nbagent wrote holds no widget code (issue 32, item 1)."""
    name = lab.write_notebook(
        "approve-pending-saved",
        [setup(["waiting = 1"]), "%followup go", "import ipywidgets\nipywidgets.Label('own')"],
    )
    open_notebook(page, lab.lab_url(name, "approve-pending-saved"))
    run_cell(page, 0)
    run_cell(page, 1)
    pending_prompt(page, 1, "waiting = 1")
    run_cell(page, 2)  # a widget of the user's own: its state is saved as usual
    cell(page, 2).locator(".widget-label", has_text="own").wait_for()
    save(page)
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000, polling=200
    )
    saved = json.loads((lab.root / name).read_text())
    state = saved["metadata"]["widgets"][WIDGET_STATE]["state"]
    assert any(m["state"].get("value") == "own" for m in state.values())  # widget state was saved
    assert [
        m["model_name"] for m in state.values() if "_esm" in m["state"] or "context_html" in m["state"]
    ] == []
    prompt_ids = [
        o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for o in saved["cells"][1]["outputs"]
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert prompt_ids and not set(prompt_ids) & set(state)
