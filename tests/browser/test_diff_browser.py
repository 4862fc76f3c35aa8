"""``%agent diff`` live in the notebook, painted by the shared painter
(labextension/src/widgets/painter.js): the what-if tutorial's fork and replay, where a note that
arrived one step late is moved a step earlier, shows the moved note with the step it is in on the
other side, the changed answer, and the parent's extra step as removed (turns of different
lengths)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Lab, shot
from fork_story import write_fork
from notebook_page import open_notebook, run_cell
from page_errors import PageErrors
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

TUTORIAL = Path(__file__).resolve().parents[2] / "notebooks" / "what-if.ipynb"
READ_DIFF_JS = """root => [...root.querySelectorAll('.nba-diff-step')].map(s => ({
  step: Number(s.dataset.step),
  changed: s.dataset.changed,
  head: s.querySelector('.nba-diff-step-head').textContent,
  sides: [...s.querySelectorAll(':scope .nba-diff-side')].map(side => ({
    side: side.dataset.side,
    missing: side.dataset.missing === 'true',
    marked: [...side.querySelectorAll(':scope > .nba-diff-msg:not([data-mark="same"])')].map(m => [
      m.dataset.mark, m.querySelector('.nba-badge').textContent, m.querySelector('.nba-line').textContent,
      m.querySelector('.nba-diff-where')?.textContent ?? null]),
    folded: [...side.querySelectorAll(':scope > .nba-diff-same')].map(f => Number(f.dataset.count)),
    carried: [...side.querySelectorAll(':scope > .nba-diff-carried')].map(f => f.querySelector('summary').textContent),
    answer: side.querySelector('.nba-diff-answer .nba-line')?.textContent ?? null,
  })),
}))"""


def code_cells() -> list[str]:
    nb = json.loads(TUTORIAL.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_agent_diff_paints_the_moved_note_and_the_changed_answers_side_by_side(lab: Lab, page: Any) -> None:
    cells = code_cells()
    cells = cells[: cells.index("%agent diff 1 1") + 1]  # the story up to the diff (then: %agent why)
    errors = PageErrors().watch(page)
    open_notebook(page, lab.lab_url(lab.write_notebook("what-if", cells), "what-if"))
    for i in range(len(cells)):
        run_cell(page, i)
    out = page.locator(".jp-Notebook .jp-Cell").nth(len(cells) - 1).locator(".jp-OutputArea")
    diff = out.locator('.nba-diff[data-nba-painted="true"]')
    diff.wait_for()
    steps = diff.evaluate(READ_DIFF_JS)
    shot(page, "diff-01-widget", out)

    assert [s["step"] for s in steps] == [1, 2, 3]
    one, two, three = steps
    # Step 1: the same request and answer on both sides.
    assert [side["marked"] for side in one["sides"]] == [[], []]
    assert one["changed"] == "false" and "same answer" in one["head"]
    # Step 2: the fork got the note here, the parent a step later (its step 3): moved, and where to.
    (a2, b2) = two["sides"]
    assert a2["marked"] == []
    assert b2["marked"] == [["moved", "note", "prices are in EUR", "moved: step 3 in a"]]
    assert (two["changed"], a2["answer"], b2["answer"]) == (
        "true",
        "The total is 120 USD (I assumed dollars).",
        "The total is 120 EUR.",
    )
    assert "the answer changed" in two["head"] and "1 moved" in two["head"]
    # The changed answer, word by word: b's words inserted, a's deleted.
    words = diff.locator('.nba-diff-step[data-step="2"] .nba-diff-words')
    assert "EUR" in " ".join(words.locator("ins").all_inner_texts())
    assert "USD" in " ".join(words.locator("del").all_inner_texts())
    # Step 3: only the parent has one. Its history (what step 2's request held) folds into one line;
    # what is new shows: the answer it repeats (removed) and the note (moved: b had it in step 2).
    (a3, b3) = three["sides"]
    assert b3["missing"] is True and a3["missing"] is False and a3["answer"] == "Noted."
    assert a3["marked"] == [
        ["removed", "assistant", "The total is 120 USD (I assumed dollars).", "removed"],
        ["moved", "note", "prices are in EUR", "moved: step 2 in b"],
    ]
    assert a3["carried"] == ["4 messages carried from step 2"]
    assert a2["carried"] == b2["carried"] == ["2 messages carried from step 1"]
    assert "1 removed · 1 moved" in three["head"]
    # The fold opens on a click, to the carried rows (built then).
    fold = diff.locator('.nba-diff-step[data-step="3"] .nba-diff-side[data-side="a"] .nba-diff-carried')
    fold.locator("summary").click()
    expect(fold.locator(".nba-diff-msg")).to_have_count(4)  # built when the fold opens: wait for it
    assert set(fold.locator(".nba-diff-msg").evaluate_all("rs => rs.map(r => r.dataset.mark)")) == {"same"}
    assert errors.uncaught == [] and errors.console == [], errors


def test_a_forks_session_tab_shows_the_diff_with_its_parent_and_picks_turns(lab: Lab, page: Any) -> None:
    parent, fork = write_fork(lab.root / "fork.nbagent.sqlite")
    errors = PageErrors().watch(page)
    open_notebook(page, lab.lab_url(lab.write_notebook("tab-diff", []), "tab-diff"))
    for sid in (fork, parent):
        page.evaluate(
            "([file, id]) => window.jupyterapp.commands.execute('nbagent:open-session', {file, id})",
            ["fork.nbagent.sqlite", sid],
        )
    tabs = {sid: page.locator(f".jp-nbagent-session#nbagent-session-{sid}") for sid in (fork, parent)}
    page.evaluate(f"() => window.jupyterapp.shell.activateById('nbagent-session-{fork}')")
    tab = tabs[fork]
    tab.locator(".jp-nbagent-tab .nba-turn").first.wait_for()
    tab.get_by_role("button", name="Diff with parent").click()
    pane = tab.locator('.jp-nbagent-diff[data-state="ok"]')
    pane.locator('.nba-diff[data-nba-painted="true"]').wait_for()
    steps = pane.locator(".nba-diff").evaluate(READ_DIFF_JS)
    shot(page, "diff-02-session-tab", tab)
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert steps[1]["sides"][1]["marked"] == [["moved", "note", "prices are in EUR", "moved: step 3 in a"]]
    assert steps[2]["sides"][1]["missing"] is True
    # The pickers name each side's turns; the parent (a) has one turn, as does the fork (b).
    assert pane.locator('select[data-side="a"] option').all_inner_texts() == ["turn 1"]
    assert pane.locator('select[data-side="b"]').input_value() == "1"
    # The pickers are JupyterLab's styled selects; the focus stays on one while the pane repaints.
    assert pane.locator(".jp-HTMLSelect > select.nba-diff-turn").count() == 2
    b = pane.locator('select[data-side="b"]')
    b.focus()
    page.evaluate("""() => { const p = document.querySelector('.jp-nbagent-diff[data-state="ok"]');
      p.querySelector('select[data-side="b"]').dispatchEvent(new Event('change')); }""")
    pane.locator('.nba-diff[data-nba-painted="true"]').wait_for()
    assert page.evaluate("() => document.activeElement.dataset.side") == "b"
    # The parent is no fork: no "Diff with parent" there; it offers "Compare with fork…" instead.
    page.evaluate(f"() => window.jupyterapp.shell.activateById('nbagent-session-{parent}')")
    compare = tabs[parent].get_by_role("button", name="Compare with fork…")
    compare.wait_for()
    assert tabs[parent].get_by_role("button", name="Diff with parent").count() == 0
    compare.click()
    other = tabs[parent].locator('.jp-nbagent-diff[data-state="ok"]')
    other.locator('.nba-diff[data-nba-painted="true"]').wait_for()
    assert other.locator("select.nba-diff-fork option").count() == 1
    assert other.locator("select.nba-diff-fork").input_value() == fork
    assert page.evaluate("() => document.activeElement.classList.contains('nba-diff-fork')")
    in_view = other.evaluate(
        "e => { const r = e.getBoundingClientRect(), t = e.closest('.jp-nbagent-tab').getBoundingClientRect();"
        " return r.top >= t.top - 1 && r.top < t.bottom; }"
    )
    assert in_view  # the pane scrolled into view
    shot(page, "diff-03-compare-with-fork", tabs[parent])
    assert errors.uncaught == [] and errors.console == [], errors


def test_a_saved_diff_shows_when_its_widget_model_is_gone(lab: Lab, page: Any) -> None:
    """A notebook reopened after its kernel (or by someone else, with no saved widget state): the
    diff output's widget view has no model, so the lab extension paints the saved view model."""
    from nbagent import read_events
    from nbagent.views.diff import DIFF_MIME, diff_json, turn_diff
    from nbagent.views.diff_paint import diff_text

    path = lab.root / "saved-diff.nbagent.sqlite"
    parent, fork = write_fork(path)
    d = turn_diff(
        read_events(path, parent), read_events(path, fork), turn_a=1, turn_b=1, names=(parent, fork)
    )
    name = lab.write_notebook("saved-diff", ["%agent diff 1 1"])
    nb = json.loads((lab.root / name).read_text())
    view = {"model_id": "0" * 32, "version_major": 2, "version_minor": 1}
    data = {
        "application/vnd.jupyter.widget-view+json": view,
        DIFF_MIME: diff_json(d),
        "text/plain": diff_text(d),
    }
    nb["cells"][0]["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": data}]
    (lab.root / name).write_text(json.dumps(nb))
    errors = PageErrors().watch(page)
    open_notebook(page, lab.lab_url(name, "saved-diff"))
    out = page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
    painted = out.locator('.jp-nbagent-output[data-view="diff"] .nba-diff[data-nba-painted="true"]')
    painted.wait_for()
    assert [s["step"] for s in painted.evaluate(READ_DIFF_JS)] == [s.step for s in d.steps]
    assert out.get_by_text("model not found").count() == 0
    shot(page, "diff-03-saved-without-model", out)
    assert errors.uncaught == [] and errors.console == [], errors
