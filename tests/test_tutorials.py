"""The tutorials run end to end in a real ipykernel, offline, and leave the log beside them: cell by
cell (nbclient, as nbconvert does) and all at once (as JupyterLab's Run All sends them), on ipykernel
7 and 6."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kernel_helpers import KERNELS, Kernel, read_events, session_ids

from nbagent.notebook.kernel.headless import output_text, run_notebook
from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def run_copy(name: str, tmp_path: Path) -> tuple[list[str], Path]:
    """Run a copy of ``notebooks/<name>.ipynb`` in ``tmp_path``; the code cells' texts and the session file."""
    path = tmp_path / f"{name}.ipynb"
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", path)
    nb = run_notebook(path, save=False, env={"NBAGENT_DB": ""})
    return [output_text(c) for c in nb.cells if c.cell_type == "code"], tmp_path / f"{name}.nbagent.sqlite"


def user_messages(path: Path) -> list[tuple[str, str]]:
    return [
        (e.data["source"]["kind"], e.data["content"][0]["text"].splitlines()[0])
        for e in read_events(path)
        if e.type == "user/message"
    ]


def test_quickstart_injects_follows_up_and_resumes_after_a_kernel_restart(tmp_path: Path) -> None:
    outs, db = run_copy("quickstart", tmp_path)
    text = "\n".join(outs)
    assert (
        "nbagent: new session " in text and " in quickstart.nbagent.sqlite for this run of nbclient" in text
    )
    assert "queued dataframe sales · 4×3 · pandas: " in text and "the model has not run" in text
    answer = 'echo: I received 3 messages.\n    1. user · dataframe · <dataframe name="sales"'
    assert answer in text
    assert "3. user · user · Which region sold the most boxes?" in text
    assert (
        "📎 **dataframe** sales · 4×3 · pandas" in text
        and "**You** · followup\n\n> Which region sold the most boxes?" in text
    )
    resumed = next(o for o in outs if o.startswith("nbagent: resumed session "))
    assert "from quickstart.nbagent.sqlite (1 turn, last active " in resumed
    assert "echo: I received 5 messages." in text
    assert "5. user · user · And what did I ask you before the restart?" in text
    assert len(session_ids(db)) == 1
    events = read_events(db)
    check_invariants(events)
    assert user_messages(db) == [
        (
            "dataframe",
            '<dataframe name="sales" library="pandas" type="pandas.DataFrame" shape="4 x 3" '
            + user_messages(db)[0][1].split('shape="4 x 3" ', 1)[1],
        ),
        ("cell", "prices are in EUR; units are boxes, not items"),
        ("user", "Which region sold the most boxes?"),
        ("user", "And what did I ask you before the restart?"),
    ]
    assert [e.data["reason"]["kind"] for e in events if e.type == "turn/end"] == ["completed", "completed"]
    assert [e.data["reason"] for e in events if e.type == "request/header"] == ["initial", "resume"]


def test_dataframe_context_shows_summaries_and_budgets(tmp_path: Path) -> None:
    outs, db = run_copy("dataframe-context", tmp_path)
    text = "\n".join(outs)
    assert "queued dataframe orders · 1000×5 · pandas: " in text
    assert "schema only: no statistics or rows were computed" in text
    assert "[500, 300] [" in text
    assert "caught KeyError: 'region'" in text and "queued error KeyError" in text
    assert "all 8 rows (a frame this small is sent whole, without statistics):\n| (index) |" in text
    kinds = [k for k, _ in user_messages(db)]
    assert kinds == ["dataframe", "dataframe", "dataframe", "dataframe", "dataframe", "error", "user"]
    (error,) = [
        e.data for e in read_events(db) if e.type == "user/message" and e.data["source"]["kind"] == "error"
    ]
    assert 'orders.groupby("region")' in error["content"][0]["text"]
    check_invariants(read_events(db))


DEBUGGING_SHAPE = [
    ("turn/start", 1),
    ("step/start", 1),
    ("user/message", "user"),
    ("tool/result", 1),
    ("step/start", 2),
    ("user/message", "cell"),
    ("user/message", "user"),
    ("turn/end", 1),
]
"""Turn 1 of the debugging tutorial: the prompt, the tool, then the note and the steer in step 2."""


def test_debugging_turn_order_injection_and_steering_reach_the_running_turns_next_step(
    tmp_path: Path,
) -> None:
    outs, db = run_copy("debugging-turn-order", tmp_path)
    text = "\n".join(outs)
    assert "the running turn reads it at its next step" in text
    events = read_events(db)
    check_invariants(events)
    assert debugging_shape(events) == DEBUGGING_SHAPE
    # the followup cell's own output was updated to the turn's end, step 2 included
    followup = next(o for o in outs if o.startswith("followup «What is a?»"))
    assert "turn 1 · done" in followup and "4. user · cell · the service was slow today" in followup
    assert "turn 1: completed" in followup


TUTORIALS = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def debugging_shape(events: list) -> list[tuple[str, object]]:
    return [
        (e.type, e.data.get("step") or (e.data.get("source") or {}).get("kind") or e.data.get("turn"))
        for e in events
        if e.type in ("step/start", "user/message", "tool/result", "turn/start", "turn/end")
    ]


@pytest.mark.parametrize("kernel_python", KERNELS)
@pytest.mark.parametrize("name", TUTORIALS)
def test_run_all_sends_every_cell_at_once_and_every_cell_succeeds_in_order(
    name: str, kernel_python: str | None, tmp_path: Path
) -> None:
    path = tmp_path / f"{name}.ipynb"
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", path)
    for cassette in NOTEBOOKS.glob(f"{name}.nbagent-cassette.json"):  # its recorded answers
        shutil.copy(cassette, tmp_path / cassette.name)
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    codes = ["".join(c["source"]) for c in cells]
    with Kernel(tmp_path, path.name, python=kernel_python) as k:
        result = k.run_all(codes)
        assert [r.parent for r in result.replies] == result.ids  # each reply in the order sent
        counts = [result.reply(i).get("execution_count") for i in range(len(codes))]
        assert counts == list(range(1, len(codes) + 1))  # every cell ran once, in order
        failed = [(i, result.reply(i)) for i in range(len(codes)) if result.reply(i)["status"] != "ok"]
        assert failed == []
        assert not [m for m in result.iopub if m.type == "error"]
        assert k.alive()
    if name == "debugging-turn-order":
        events = read_events(tmp_path / f"{name}.nbagent.sqlite")
        check_invariants(events)
        assert debugging_shape(events) == DEBUGGING_SHAPE
        assert [e.data["reason"]["kind"] for e in events if e.type == "turn/end"] == ["completed"]


def test_the_demo_command_runs_offline_and_prints_the_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    from nbagent.__main__ import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "injected context; status 'idle', 1 message pending, no model call" in out
    assert "6 user/message         [cell] Prices are in EUR." in out
    assert "7 user/message         [user] Which region sold the most?" in out
    assert "**You** · followup\n\n> Which region sold the most?" in out
