"""notebooks/what-if.ipynb runs offline in a real kernel and tells its story: a note one step late,
a fork, a replay with the note moved, and a diff showing the moved note and the changed answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from kernel_helpers import KERNELS, Kernel, read_events

import nbagent
from nbagent.notebook.kernel.headless import output_text, run_notebook
from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel
NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "what-if.ipynb"


def test_the_what_if_tutorial_moves_the_note_and_the_answer_changes(tmp_path: Path) -> None:
    path = tmp_path / NOTEBOOK.name
    shutil.copy(NOTEBOOK, path)
    nb = run_notebook(path, save=False, env={"NBAGENT_DB": ""})
    outs = {c.source.splitlines()[0]: output_text(c) for c in nb.cells if c.cell_type == "code"}
    assert "USD (I assumed dollars)" in outs["%agent transcript"]
    assert "forked session" in outs["%agent fork --before-turn 1"]
    assert "<Arrival inject note 'prices are in EUR' seen by step 3 id=" in outs["child = current_agent()"]
    assert (
        outs["run = await child.replay(turn=1, move={plan[0].message_id: 1})"].strip()
        == "'The total is 120 EUR.'"
    )
    diff = outs["%agent diff 1 1"]
    assert "~ user" in diff and "prices are in EUR" in diff
    assert "step 2  (answer changed)" in diff and "step 3  (answer changed)" in diff
    assert "b answered: The total is 120 EUR." in diff
    assert "messages carried from step 1" in diff and "[-USD (I assumed dollars).-]{+EUR.+}" in diff
    why = outs["%agent why 1"]
    assert "Which context mattered in turn 1" in why and "2 items, 3 runs" in why
    assert "note 'prices are in EUR' (answer changed" in why.split("1. ")[1].splitlines()[0]
    assert "at or below the noise, says nothing: note 'the customer is ACME GmbH in Berlin' (0.000)" in why


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_the_what_if_tutorial_tells_the_same_story_with_run_all(kernel_python, tmp_path: Path) -> None:
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    with Kernel(tmp_path, notebook=NOTEBOOK.name, python=kernel_python) as k:
        result = k.run_all(cells)
        assert [result.reply(i)["status"] for i in range(len(cells))] == ["ok"] * len(cells)
        diff = result.text(cells.index("%agent diff 1 1"))
    assert "~ user      [note] prices are in EUR" in diff and "b answered: The total is 120 EUR." in diff
    store = tmp_path / "what-if.nbagent.sqlite"
    (parent,) = [r for r in nbagent.list_sessions(store) if r.parent is None]
    (child,) = [r for r in nbagent.list_sessions(store) if r.parent == parent.id]
    check_invariants(read_events(store, parent.id))
    check_invariants(read_events(store, child.id))
