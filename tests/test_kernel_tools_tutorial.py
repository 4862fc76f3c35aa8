"""notebooks/agent-tools.ipynb runs offline in a real kernel, cell by cell (nbclient) and with Run All
(every cell sent at once), and tells the same story both ways."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from kernel_helpers import KERNELS, Kernel, read_events

from nbagent.log.events import Event
from nbagent.notebook.kernel.headless import output_text, run_notebook
from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel
NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "agent-tools.ipynb"


def the_story(events: list[Event]) -> list[tuple[str, str]]:
    """Tool calls, approvals and error codes of the tutorial's turn, in log order."""
    out = []
    for e in events:
        if e.type == "tool/call":
            out.append(("call", e.data["name"]))
        elif e.type == "approval/decided":
            out.append(("decided", e.data["outcome"]))
        elif e.type == "tool/result" and "error" in e.data:
            out.append(("error", e.data["error"]["code"]))
        elif e.type == "turn/end":
            out.append(("end", e.data["reason"]["kind"]))
    return out


STORY = [
    ("call", "list_variables"),
    ("call", "describe_variable"),
    ("call", "run_code"),
    ("decided", "allowed-once"),
    ("call", "run_code"),
    ("decided", "rejected"),
    ("error", "DENIED"),
    ("end", "completed"),
]


def test_the_tutorial_runs_cell_by_cell_and_shows_one_approval_and_one_denial(tmp_path):
    path = tmp_path / NOTEBOOK.name
    shutil.copy(NOTEBOOK, path)
    nb = run_notebook(path, save=False, env={"NBAGENT_DB": ""})
    outs = {c.source.splitlines()[0]: output_text(c) for c in nb.cells if c.cell_type == "code"}
    # Each says what it decided, code and all.
    assert outs["%agent approve"].startswith(
        "nbagent: approved run_code (%agent approve) — approval approval-"
    )
    assert "in turn 1" in outs["%agent approve"] and "\n    revenue = orders[" in outs["%agent approve"]
    assert outs["%agent deny"].startswith("nbagent: denied run_code (%agent deny) — approval approval-")
    assert "\n    orders = orders[orders.status != 'refunded']" in outs["%agent deny"]
    followup = outs["%followup What is the paid revenue per region?"]
    assert "turn 1: completed" in followup
    assert "approval (turn 1): run_code approved (%agent approve)\nrevenue = orders[" in followup
    assert (
        "approval (turn 1): run_code denied (%agent deny)\norders = orders[orders.status != 'refunded']"
        in followup
    )
    assert outs["print(revenue)"].endswith(
        "east      95.25\nnorth    197.75\nsouth    141.50\nName: amount, dtype: float64\n"
        "refunded rows still in orders: 2\n"
    )
    assert "approval/decided run_code allowed-once" in outs["for e in current_agent().events:"]
    events = read_events(tmp_path / "agent-tools.nbagent.sqlite")
    check_invariants(events)
    assert the_story(events) == STORY


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_the_tutorial_tells_the_same_story_with_run_all(kernel_python, tmp_path):
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    with Kernel(tmp_path, notebook=NOTEBOOK.name, python=kernel_python) as k:
        result = k.run_all(cells)
        assert [result.reply(i)["status"] for i in range(len(cells))] == ["ok"] * len(cells)
    events = read_events(tmp_path / "agent-tools.nbagent.sqlite")
    check_invariants(events)
    assert the_story(events) == STORY
