"""Proposed cells (SPEC §9.7) in JupyterLab and Notebook 7, in Debian's Chromium: a scripted model's
``propose_cell`` shows under its turn; Insert and run puts the cell right below the cell that asked
and runs it; the model's next request holds the notebook note; reopened without a kernel the
proposal is read-only; an untrusted copy inserts nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Lab, shot, start_lab
from notebook_page import open_notebook, output_text, run_cell, save
from page_errors import PageErrors
from test_lab_extension import NO_KERNELS, dismiss_kernel_dialog

pytestmark = pytest.mark.browser

CODE = "proposed_value = 6 * 7\nprint('ran', proposed_value, '<b>not bold</b>')"
SETUP = f"""\
%load_ext nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
model = ScriptedModel([
    Response(tool_calls=[ToolCall('propose_cell', {{'code': {CODE!r}, 'note': 'a <i>quick</i> check'}})]),
    'over to you',
    'thanks',
])
current_agent().set_model(model)"""
NOTES = (
    "print([m.plain_text for m in model.requests[-1].messages "
    "if (getattr(m, 'source', None) or {}).get('kind') == 'notebook'])"
)
CELLS = [SETUP, "%followup propose a cell", "%followup --wait and now?", NOTES]
SOURCES_JS = (
    "() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => c.model.sharedModel.getSource())"
)


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def proposal(page: Any, index: int) -> Any:
    row = cell(page, index).locator('.jp-nbagent-output .nba-proposal[data-proposal="1.1"]')
    row.wait_for()
    return row


def propose_insert_and_run(page: Any, front_end: str) -> None:
    """Run the proposing turn, click Insert and run, check the cell, its output and the note."""
    run_cell(page, 0)
    run_cell(page, 1)
    cell(page, 1).get_by_text("turn 1 · done").wait_for()
    row = proposal(page, 1)
    assert row.locator("pre").inner_text() == CODE  # the code as text: no <b> element
    assert row.locator("b").count() == 0 and row.locator("i").count() == 0
    buttons = row.locator("button:visible").all_inner_texts()
    assert buttons == ["Insert below", "Insert and run", "Copy"], buttons
    shot(page, f"proposals-01-{front_end}-proposed", cell(page, 1))

    row.locator('button[data-action="insert-and-run"]').click()
    row.locator('.nba-proposal-said:text-matches("inserted and ran below In \\\\[2\\\\]")').wait_for()
    assert page.evaluate(SOURCES_JS) == [SETUP, CELLS[1], CODE, CELLS[2], NOTES]  # right below the asker
    cell(page, 2).get_by_text("ran 42 <b>not bold</b>").wait_for()  # "Insert and run" ran it
    shot(page, f"proposals-02-{front_end}-inserted-and-ran", cell(page, 2))

    run_cell(page, 3)
    cell(page, 3).get_by_text("· done").first.wait_for()
    run_cell(page, 4)
    cell(page, 4).get_by_text("[notebook]").wait_for()
    notes = output_text(page, 4)
    assert "The user inserted and ran your proposed cell 1.1 below In[2]." in notes, notes


def url(lab: Lab, name: str, front_end: str) -> str:
    return lab.lab_url(name, name.replace(".", "-")) if front_end == "lab" else lab.notebook7_url(name)


@pytest.mark.parametrize("front_end", ["lab", "nb7"])
def test_insert_and_run_then_reopened_read_only_and_untrusted_inserts_nothing(
    lab: Lab, page: Any, browser: Any, tmp_path: Path, front_end: str
) -> None:
    errors = PageErrors().watch(page)
    stacks: list[str] = []
    page.on("pageerror", lambda exc: stacks.append(exc.stack or str(exc)))
    name = lab.write_notebook(f"propose-{front_end}", CELLS)
    open_notebook(page, url(lab, name, front_end))
    propose_insert_and_run(page, front_end)
    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    saved = json.loads((lab.root / name).read_text())
    assert "".join(saved["cells"][2]["source"]) == CODE
    # Notebook 7.6 itself throws one error while loading its settings ("reading 'schema'", in
    # notebook_core, with or without nbagent): only errors from nbagent's code fail this test.
    assert [s for s in stacks if "nbagent" in s] == [], stacks
    assert [e for e in errors.console if "nbagent" in e or "nba-" in e] == [], errors

    # Reopened on a server where no kernel can start: the proposal shows, with Copy only.
    with start_lab(tmp_path, root=lab.root, extra_args=NO_KERNELS) as bare:
        again = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            again.goto(url(bare, name, front_end))
            dismiss_kernel_dialog(again)
            row = proposal(again, 1)
            assert row.locator("button:visible").all_inner_texts() == ["Copy"]
            assert row.locator("pre").inner_text() == CODE
            # The saved output remembers what the user did with it (the click updated it).
            assert row.get_attribute("data-state") == "inserted-and-ran"
            assert row.locator(".nba-proposal-said").inner_text() == "inserted and ran below In [2]"
            shot(again, f"proposals-03-{front_end}-reopened-no-kernel", cell(again, 1))
        finally:
            again.close()

    # An untrusted copy (another content, so its signature does not match): no insert, even asked.
    saved["metadata"]["reopened"] = True
    copy = f"propose-{front_end}-untrusted.ipynb"
    (lab.root / copy).write_text(json.dumps(saved))
    open_notebook(page, url(lab, copy, front_end))
    row = proposal(page, 1)
    assert row.locator("button:visible").all_inner_texts() == ["Copy"]
    before = page.evaluate(SOURCES_JS)
    said = row.locator("pre").evaluate(
        """(from) => {
          let words = null;
          const detail = { proposal: '1.1', code: 'print(1)', run: true, cellId: null,
                           settle: (w) => { words = w; } };
          from.dispatchEvent(new CustomEvent('nbagent-proposal', { bubbles: true, cancelable: true, detail }));
          return words;
        }"""
    )
    assert said == "not inserted: this output is not trusted (File › Trust Notebook first)"
    assert page.evaluate(SOURCES_JS) == before
    shot(page, f"proposals-04-{front_end}-untrusted", cell(page, 1))


READER = """\
%load_ext nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('read_notebook', {})]), 'read']))"""
LAST_RESULT = """\
from nbagent.notebook import current_agent
print([e for e in current_agent().events if e.type == 'tool/result'][-1].data['message']['content'][0]['content'][0]['text'])"""
EDIT_JS = """(text) => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  cells[1].model.sharedModel.setSource(text);
}"""


@pytest.mark.parametrize("front_end", ["lab", "nb7"])
def test_read_notebook_sees_an_unsaved_edit_through_the_extension(
    lab: Lab, page: Any, front_end: str
) -> None:
    errors = PageErrors().watch(page)
    name = lab.write_notebook(
        f"live-doc-{front_end}", [READER, "print('saved text')", "%followup read it", LAST_RESULT]
    )
    open_notebook(
        page, lab.lab_url(name, f"live-doc-{front_end}") if front_end == "lab" else lab.notebook7_url(name)
    )
    run_cell(page, 0)
    page.evaluate(EDIT_JS, "print('UNSAVED EDIT 123')")  # never saved: only the front end has it
    run_cell(page, 2)
    cell(page, 2).get_by_text("turn 1 · done").wait_for()
    run_cell(page, 3)
    cell(page, 3).get_by_text("the live document").wait_for()
    text = output_text(page, 3)
    assert text.startswith(
        f"Notebook {name}, the live document open in the front end (4 cells; edits not saved"
    ), text
    assert "[2] code · not run\nprint('UNSAVED EDIT 123')" in text, text
    assert "saved text" not in text
    assert "UNSAVED" not in (lab.root / name).read_text()
    shot(page, f"live-document-{front_end}", cell(page, 3))
    assert [e for e in errors.console if "nbagent" in e or "nba-" in e] == [], errors


def test_the_timeline_widget_inserts_below_the_cell_whose_prompt_started_the_turn(
    lab: Lab, page: Any
) -> None:
    errors = PageErrors().watch(page)
    shown = "from nbagent.widgets import show\nfrom nbagent.notebook import current_agent\nwidgets = show(current_agent())"
    name = lab.write_notebook(
        "propose-widget", [SETUP, "%followup propose a cell", "print('between')", shown]
    )
    open_notebook(page, lab.lab_url(name, "propose-widget"))
    run_cell(page, 0)
    run_cell(page, 1)
    cell(page, 1).get_by_text("turn 1 · done").wait_for()
    run_cell(page, 3)
    row = cell(page, 3).locator('.jp-nbagent-output[data-view="live"] .nba-proposal[data-proposal="1.1"]')
    row.wait_for()  # the live timeline widget paints the proposal too
    assert row.locator("pre").inner_text() == CODE
    row.locator('button[data-action="insert"]').click()
    widget = cell(page, 4).locator('.jp-nbagent-output[data-view="live"] .nba-proposal')  # moved down one
    widget.locator(".nba-proposal-said", has_text="inserted below In [2]").wait_for()
    sources = page.evaluate(SOURCES_JS)
    assert sources == [SETUP, CELLS[1], CODE, "print('between')", shown], (
        sources
    )  # below the asker, not the widget
    assert cell(page, 2).locator(".jp-OutputArea-output").count() == 0  # inserted, not run
    shot(page, "proposals-05-widget-insert-below", cell(page, 4))
    assert [e for e in errors.console if "nbagent" in e or "nba-" in e] == [], errors


CODE_A, CODE_B = "first_step = 1", "second_step = first_step + 1"
TWO = f"""\
%load_ext nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
current_agent().set_model(ScriptedModel([
    Response(tool_calls=[ToolCall('propose_cell', {{'code': {CODE_A!r}}}),
                         ToolCall('propose_cell', {{'code': {CODE_B!r}}})]),
    'two cells for you',
]))"""
OPACITY_JS = "(b) => getComputedStyle(b).opacity"


def insert_button(row: Any) -> Any:
    return row.locator('button[data-action="insert"]')


def test_two_proposals_keep_their_order_look_disabled_once_in_and_stay_in_after_a_reload(
    lab: Lab, page: Any, browser: Any, tmp_path: Path
) -> None:
    """Issue #35 item 1: 1.1 then 1.2 go in in the model's order; a disabled insert looks disabled and
    says why; in a reopened notebook with a fresh kernel (nbagent not loaded) the click is recorded in
    the saved notebook, so after a reload the proposals show inserted and none goes in twice."""
    errors = PageErrors().watch(page)
    name = lab.write_notebook("propose-two", [TWO, "%followup propose two cells", "print('after')"])
    open_notebook(page, lab.lab_url(name, "propose-two"))
    run_cell(page, 0)
    run_cell(page, 1)
    cell(page, 1).get_by_text("turn 1 · done").wait_for()
    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")

    # A fresh kernel: another server on the same root, where nothing has run yet.
    with start_lab(tmp_path, root=lab.root) as fresh:
        again = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            open_notebook(again, fresh.lab_url(name, "propose-two-fresh"))
            again.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'"
            )
            rows = {p: cell(again, 1).locator(f'.jp-nbagent-output .nba-proposal[data-proposal="{p}"]')
                    for p in ("1.1", "1.2")}  # fmt: skip
            for row in rows.values():
                insert_button(row).wait_for()
            assert insert_button(rows["1.1"]).evaluate(OPACITY_JS) == "1"

            insert_button(rows["1.1"]).click()
            rows["1.1"].locator(".nba-proposal-said", has_text="inserted below").wait_for()
            held = insert_button(rows["1.1"])
            assert held.is_disabled()
            assert held.evaluate(OPACITY_JS) == "0.4"  # JupyterLab's disabled look, not an enabled one
            assert held.get_attribute("title") == "Already inserted: this notebook holds this proposal"
            assert not insert_button(rows["1.2"]).is_disabled()
            insert_button(rows["1.2"]).click()
            rows["1.2"].locator(".nba-proposal-said", has_text="inserted below").wait_for()
            sources = again.evaluate(SOURCES_JS)
            assert sources == [TWO, "%followup propose two cells", CODE_A, CODE_B, "print('after')"], sources
            shot(again, "proposals-06-two-in-order", cell(again, 1))
            save(again)
            again.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")

            again.reload()
            open_notebook(again, fresh.lab_url(name, "propose-two-fresh"))
            for p in ("1.1", "1.2"):
                row = cell(again, 1).locator(f'.jp-nbagent-output .nba-proposal[data-proposal="{p}"]')
                row.locator(".nba-proposal-said", has_text="inserted below").wait_for()
                assert row.get_attribute("data-state") == "inserted"
                assert insert_button(row).is_disabled()
            shot(again, "proposals-07-reloaded-still-inserted", cell(again, 1))
            # Asked again anyway (a stale row, another view): the notebook holds it, nothing goes in.
            said = (
                cell(again, 1)
                .locator('.nba-proposal[data-proposal="1.1"] pre')
                .evaluate(
                    """(from) => new Promise((done) => {
                  const detail = { proposal: '1.1', code: 'first_step = 1', run: false, cellId: null,
                                   settle: (w, inserted) => done([w, inserted]) };
                  from.dispatchEvent(new CustomEvent('nbagent-proposal', { bubbles: true, cancelable: true, detail }));
                })"""
                )
            )
            assert said[1] is True and said[0].startswith("inserted below"), said
            assert again.evaluate(SOURCES_JS) == sources
        finally:
            again.close()
    assert [e for e in errors.console if "nbagent" in e or "nba-" in e] == [], errors
