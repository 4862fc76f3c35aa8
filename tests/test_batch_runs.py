"""Batch runs that agree (SPEC §9.5): nbconvert (with and without ``--output``), ``jupyter execute``,
papermill and a script driving nbclient each keep the session beside the notebook they execute, and
each run starts a fresh session there, keeping the earlier runs' (listed with how they were run);
``NBAGENT_SESSION=continue`` continues the latest instead. Real runners in real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_helpers import read_events, session_ids

from nbagent.notebook.kernel.runs import parse_runner

pytestmark = pytest.mark.kernel

BIN = Path(sys.executable).parent

NBCLIENT_SCRIPT = """
import nbformat
from nbclient import NotebookClient

nb = nbformat.read("analysis.ipynb", as_version=4)
NotebookClient(nb, resources={"metadata": {"path": "."}}).execute()
nbformat.write(nb, "out/executed.ipynb")  # beside it, the kernel's folder holds one notebook
"""

RUNNERS: dict[str, tuple[list[str], str]] = {
    # runner: (command, the executed notebook it writes)
    "nbconvert --output": (
        [
            str(BIN / "jupyter-nbconvert"),
            "--execute",
            "--to",
            "notebook",
            "--output",
            "run1.ipynb",
            "analysis.ipynb",
        ],
        "run1.ipynb",
    ),
    "nbconvert": (
        [sys.executable, "-m", "nbconvert", "--execute", "--to", "notebook", "analysis.ipynb"],
        "analysis.nbconvert.ipynb",
    ),
    "jupyter execute": (
        [str(BIN / "jupyter-execute"), "--output", "executed.ipynb", "analysis.ipynb"],
        "executed.ipynb",
    ),
    "papermill": ([str(BIN / "papermill"), "analysis.ipynb", "executed.ipynb"], "executed.ipynb"),
    "nbclient": ([sys.executable, "-c", NBCLIENT_SCRIPT], "out/executed.ipynb"),
}

HOW = {
    "nbconvert --output": "jupyter nbconvert --execute --output run1.ipynb",
    "nbconvert": "jupyter nbconvert --execute",
    "jupyter execute": "jupyter execute --output executed.ipynb",
    "papermill": "papermill",
    "nbclient": "nbclient",
}


def write_notebook(path: Path, cells: list[str]) -> None:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb = {
        "cells": [{**cell, "id": f"c{i}", "source": src} for i, src in enumerate(cells)],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def run(command: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NBAGENT_DB", "JPY_SESSION_NAME", "NBAGENT_SESSION", "ANTHROPIC_API_KEY")
    }
    done = subprocess.run(command, cwd=cwd, env={**env, **extra}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def shown(path: Path) -> str:
    """Every text output of an executed notebook."""
    nb = json.loads(path.read_text())
    return "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
    )


def prompts(db: Path, session_id: str) -> list[str]:
    return [e.data["content"][0]["text"] for e in read_events(db, session_id) if e.type == "user/message"]


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_each_runner_run_twice_starts_a_fresh_session_beside_the_notebook(
    tmp_path: Path, runner: str
) -> None:
    write_notebook(tmp_path / "analysis.ipynb", ["%load_ext nbagent", "%followup --wait hello"])
    (tmp_path / "out").mkdir()
    command, executed = RUNNERS[runner]
    run(command, tmp_path)
    first = shown(tmp_path / executed)
    run(command, tmp_path)
    second = shown(tmp_path / executed)
    db = tmp_path / "analysis.nbagent.sqlite"
    ids = session_ids(db)
    assert len(ids) == 2  # one session per run, both kept
    assert [prompts(db, sid) for sid in ids] == [["hello"], ["hello"]]
    for said in (first, second):
        assert "echo: I received 1 message." in said  # run 2 does not see run 1's history
        assert f"in analysis.nbagent.sqlite for this run of {HOW[runner]} (model echo)" in said
    assert not list(tmp_path.rglob("nbagent.sqlite"))  # never the shared file
    listing = subprocess.run(
        [sys.executable, "-m", "nbagent", "sessions", "list", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.stdout.count(f"    notebook analysis.ipynb · run: {HOW[runner]}\n") == 2
    assert listing.stdout.count(f"model echo  {HOW[runner]} · ") == 2  # each named after its run


def test_nbagent_session_continue_continues_the_latest_run(tmp_path: Path) -> None:
    write_notebook(tmp_path / "analysis.ipynb", ["%load_ext nbagent", "%followup --wait hello"])
    command, executed = RUNNERS["jupyter execute"]
    run(command, tmp_path)
    run(command, tmp_path, NBAGENT_SESSION="continue")
    db = tmp_path / "analysis.nbagent.sqlite"
    (only,) = session_ids(db)
    assert prompts(db, only) == ["hello", "hello"]
    assert "echo: I received 3 messages." in shown(tmp_path / executed)


def test_a_misspelt_nbagent_session_is_refused_with_the_one_value(tmp_path: Path) -> None:
    write_notebook(tmp_path / "analysis.ipynb", ["%load_ext nbagent", "%followup --wait hello"])
    env = {k: v for k, v in os.environ.items() if k not in ("NBAGENT_DB", "JPY_SESSION_NAME")}
    done = subprocess.run(
        [str(BIN / "jupyter-execute"), "analysis.ipynb"],
        cwd=tmp_path,
        env={**env, "NBAGENT_SESSION": "contine"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "NBAGENT_SESSION='contine' is not understood: set it to `continue`" in done.stderr
    assert not (tmp_path / "analysis.nbagent.sqlite").exists()


def test_runner_command_lines_name_the_notebook_never_an_option_value(tmp_path: Path) -> None:
    (tmp_path / "run1.ipynb").write_text("{}")  # an earlier run's output
    (tmp_path / "analysis.ipynb").write_text("{}")
    nb = tmp_path / "analysis.ipynb"
    cases = {
        (
            "jupyter-nbconvert",
            "--execute",
            "--to",
            "notebook",
            "--output",
            "run1.ipynb",
            "analysis.ipynb",
        ): nb,
        ("jupyter-nbconvert", "--execute", "--output=run1", "analysis.ipynb"): nb,
        ("jupyter-execute", "--output", "run1", "analysis"): nb,
        ("python", "-m", "nbconvert", "--execute", "--output-dir", "out", "analysis.ipynb"): nb,
        ("papermill", "-p", "name", "run1.ipynb", "analysis.ipynb", "out.ipynb", "--cwd", "."): nb,
    }
    for argv, notebook in cases.items():
        runner = parse_runner(["/usr/bin/python3", *argv], tmp_path)
        assert runner is not None and runner.notebooks == (notebook,), argv
    assert parse_runner(["python", "-m", "ipykernel_launcher"], tmp_path) is None
