"""What surprised a new user in the first week, in real kernels and real commands: a ``--db`` in a
missing folder, reading a session another kernel holds, the quickstart run twice, the words of
errors and counts, and a steer's cell that shows the turn it joined."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_helpers import Kernel, session_ids

from nbagent.notebook.kernel.headless import run_notebook

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parent.parent


def usage_error(result, index: int) -> str:  # type: ignore[no-untyped-def]
    reply = result.reply(index)
    assert (reply["status"], reply["ename"]) == ("error", "UsageError"), reply
    return str(reply["evalue"])


def test_a_db_in_a_missing_folder_says_so_and_creates_no_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-such" / "dir"
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        result = k.run_all(
            [f"%agent --db {missing / 'x.sqlite'}", "%inject hello there", "%agent status"],
            stop_on_error=False,
        )
        assert result.text(0) == (
            f"nbagent: using {missing / 'x.sqlite'} — its folder {missing} does not exist, and nbagent "
            "creates the file, never folders\n"
        )
        assert usage_error(result, 1) == (
            f"nbagent cannot use the session file {missing / 'x.sqlite'}: its folder {missing} does not "
            "exist (nbagent creates the file, never folders); choose another with `%agent --db PATH` "
            "(or the NBAGENT_DB environment variable)"
        )
        assert result.text(2) == (
            f"no session open · file no-such/dir/x.sqlite — its folder {missing} does not exist, and "
            "nbagent creates the file, never folders\n"
        )
    assert not (tmp_path / "no-such").exists()


def test_a_file_that_is_not_a_session_file_is_named_once_with_one_way_out(tmp_path: Path) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database")
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        result = k.run_all([f"%agent --db {bad}", "%inject hello there"])
        said = usage_error(result, 1)
    assert said == (
        f"nbagent cannot use the session file {bad}: it is not an nbagent session file (not an SQLite "
        "database); nbagent left it unchanged; choose another with `%agent --db PATH` (or the "
        "NBAGENT_DB environment variable)"
    )
    assert said.count(str(bad)) == 1 and bad.read_text() == "not a database"


def test_transcript_reads_a_session_another_kernel_holds_and_takes_nothing_from_it(tmp_path: Path) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path) as first:
        first.run("%load_ext nbagent")
        first.run("%followup --wait what is in the data?")
        (sid,) = session_ids(db)
        with Kernel(tmp_path) as second:
            second.run("%load_ext nbagent")
            shown = second.run("%agent transcript")
            assert shown.startswith(f"# Session {sid[:8]}")
            assert "> what is in the data?" in shown and "in use by another kernel" not in shown
            assert "status: idle" in first.run("%followup --wait and now?\n%agent status")
        assert session_ids(db) == [sid]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only files")
def test_transcript_reads_a_read_only_session_file(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("%followup --wait hello")
    db = tmp_path / "work.nbagent.sqlite"
    db.chmod(0o444)
    try:
        with Kernel(tmp_path) as k:
            k.run("%load_ext nbagent")
            shown = k.run("%agent transcript")
        assert "> hello" in shown and "read-only" not in shown
    finally:
        db.chmod(0o644)


def quickstart(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NBAGENT_DB", "JPY_SESSION_NAME")}
    return subprocess.run(
        [sys.executable, "-m", "nbagent", "quickstart", "--headless"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def story(out: str) -> list[str]:
    """The lines of a quickstart run that tell its turns and what the model received, without the
    session ids and times that differ from run to run."""
    lines = [line for line in out.splitlines() if "turn" in line or "received" in line]
    lines = [line for line in lines if not re.match(r"  [0-9a-f]{8}  ", line)]  # earlier runs' sessions
    return [re.sub(r"\b[0-9a-f]{8}\b|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "…", line) for line in lines]


def test_the_quickstart_run_twice_starts_a_fresh_session_and_shows_no_transport_warning(
    tmp_path: Path,
) -> None:
    first = quickstart(tmp_path)
    assert first.returncode == 0, first.stderr
    second = quickstart(tmp_path)
    assert second.returncode == 0, second.stderr
    assert len(session_ids(tmp_path / "quickstart.nbagent.sqlite")) == 2  # each run's session, kept
    assert "for this run of nbagent quickstart --headless (model echo)" in second.stdout
    assert "── the kernel was restarted here (Kernel → Restart) ──\n\n" in first.stdout  # the restart shows
    assert "\n# nbagent quickstart\n" in first.stdout  # and what the Markdown cells say
    hint = "nbagent: for git, the .gitignore line `*.nbagent.sqlite-*`"
    assert first.stdout.count(hint) == 1 and hint not in second.stdout  # once, where the file is created
    assert story(second.stdout) == story(first.stdout)  # the same turns, the same messages received
    for run in (first, second):
        assert "without encryption" not in run.stderr + run.stdout


def nbagent_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbagent", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_command_line_errors_name_commands_and_counts_read_as_words(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("%followup --wait hello")
    db = tmp_path / "work.nbagent.sqlite"
    listing = nbagent_cli("sessions", "list", str(db), cwd=tmp_path)
    assert " 1 turn " in listing.stdout and "turns" not in listing.stdout
    copied = nbagent_cli(
        "sessions", "copy", str(db), str(tmp_path / "copy.sqlite"), "--session", "nope", cwd=tmp_path
    )
    assert copied.returncode == 1
    assert copied.stderr == (
        f"nbagent sessions copy: no session nope in {db}; `python -m nbagent sessions list {db}` lists them\n"
    )
    (tmp_path / "junk.sqlite").write_text("junk")
    junk = nbagent_cli("sessions", "list", "junk.sqlite", cwd=tmp_path)
    assert junk.returncode == 1 and "NBAGENT_DB" not in junk.stderr and "()" not in junk.stderr
    nothing = nbagent_cli("sessions", "list", "absent.sqlite", cwd=tmp_path)
    assert nothing.returncode == 1 and nothing.stdout == ""
    assert nothing.stderr.startswith("nbagent sessions list: there is no file ")
    assert "absent.sqlite; a notebook's session file is <notebook>.nbagent.sqlite beside it" in nothing.stderr
    assert "    notebook work.ipynb · run: interactive (Jupyter)\n" in listing.stdout


def test_a_steer_cell_shows_the_turn_it_joined_from_its_start(tmp_path: Path) -> None:
    notebook = tmp_path / "debugging-turn-order.ipynb"
    shutil.copy(ROOT / "notebooks" / "debugging-turn-order.ipynb", notebook)
    nb = run_notebook(notebook, timeout=120, save=False)
    (steer,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%steer")]
    (followup,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%followup")]

    def nodes(cell) -> list[dict]:  # type: ignore[no-untyped-def]
        """The nodes of the cell's live view as it ended (nbclient applies the display updates)."""
        bundles = [
            o["data"]["application/vnd.nbagent.timeline+json"]
            for o in cell.outputs
            if "application/vnd.nbagent.timeline+json" in o.get("data", {})
        ]
        return list(bundles[-1]["nodes"])

    (joined,) = [n for n in nodes(steer) if n["type"] == "turn"]
    (started,) = [n for n in nodes(followup) if n["type"] == "turn"]
    assert joined["title"] == started["title"] == "What is a?"
    assert joined["duration_text"] == started["duration_text"]
    assert len([n for n in nodes(steer) if n["type"] == "step"]) == 2  # step 1, before the steer, too


def write_notebook(path: Path, cells: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb = {
        "cells": [{**cell, "id": f"c{i}", "source": src} for i, src in enumerate(cells)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def jupyter_execute(cwd: Path, *notebooks: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NBAGENT_DB", "JPY_SESSION_NAME")}
    command = Path(sys.executable).parent / "jupyter-execute"
    return subprocess.run(
        [str(command), "--inplace", *notebooks], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_jupyter_execute_puts_each_notebooks_session_beside_it(tmp_path: Path) -> None:
    for name in ("alpha", "one/beta", "two/gamma"):
        write_notebook(tmp_path / f"{name}.ipynb", ["%load_ext nbagent", f"%followup --wait from {name}"])
    assert jupyter_execute(tmp_path, "alpha.ipynb").returncode == 0
    done = jupyter_execute(tmp_path, "one/beta.ipynb", "two/gamma")  # two folders: each knows its own
    assert done.returncode == 0, done.stderr
    for name in ("alpha", "one/beta", "two/gamma"):
        assert len(session_ids(tmp_path / f"{name}.nbagent.sqlite")) == 1, name
    assert not list(tmp_path.rglob("nbagent.sqlite"))


def test_jupyter_execute_of_notebooks_sharing_a_folder_says_which_file_and_why(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        write_notebook(tmp_path / f"{name}.ipynb", ["%load_ext nbagent", f"%followup --wait from {name}"])
    done = jupyter_execute(tmp_path, "alpha.ipynb", "beta.ipynb")
    assert done.returncode == 0, done.stderr
    assert len(session_ids(tmp_path / "nbagent.sqlite")) == 2  # one session each, never shared
    out = json.loads((tmp_path / "beta.ipynb").read_text())
    said = "".join(out["cells"][1]["outputs"][0]["text"])
    assert said.startswith("nbagent: new session ")
    assert (
        ", the shared file of this folder, for this run of jupyter execute (model echo); this kernel cannot "
        "tell which notebook it runs" in said
    )
