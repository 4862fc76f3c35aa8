"""What a new user meets first, in a real kernel: help that never starts a turn, true ``In []``
numbers, read-only commands that create nothing, one-line errors for a busy session and a bad file,
the expression-or-text rule, install lines for missing extras, a ``--wait`` that fails on an error
run, and nbconvert runs that find their notebook and never share a session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events, session_ids

from nbagent.notebook.magics.injection import classify

pytestmark = pytest.mark.kernel


def usage_error(result, index: int) -> str:  # type: ignore[no-untyped-def]
    reply = result.reply(index)
    assert (reply["status"], reply["ename"]) == ("error", "UsageError"), reply
    return str(reply["evalue"])


def test_question_marks_and_help_flags_show_help_and_never_start_a_turn(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        asks = ["%inject?", "%followup?", "%steer?", "%agent?"]
        flags = [
            "%inject --help",
            "%followup --help",
            "%steer -h",
            "%agent --help",
            "%followup ?",
            "%%steer --help\nbody",
        ]
        result = k.run_all(asks + flags)
        for i, code in enumerate(asks):
            reply = result.reply(i)
            assert reply["status"] == "ok"
            (page,) = [p for p in reply["payload"] if p["source"] == "page"]
            verb = code[1:-1]
            assert f"%{verb} [" in page["data"]["text/plain"], code
        for i, code in enumerate(flags, start=len(asks)):
            assert result.reply(i)["status"] == "ok", code
            text = result.text(i)
            verb = code.lstrip("%").split()[0]
            assert text.startswith(f"  %{verb} ["), (code, text)
            assert "options:" in text
        assert "status" in result.text(7) and "resume" in result.text(7)  # %agent's commands are listed
    assert list(tmp_path.glob("*.sqlite*")) == []  # nothing was sent, so no session was opened


def test_the_recorded_cell_number_is_the_cells_in_number(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        result = k.run_all(["x = 1", "%inject the value of x is one", "%followup what is x?"])
        counts = [result.reply(i)["execution_count"] for i in (1, 2)]
        k.run("%agent wait")
    recorded = [
        m["source"]["cell"]["execution_count"]
        for e in read_events(tmp_path / "work.nbagent.sqlite")
        if e.type == "agent/inbox/spliced"
        for m in e.data["inserted"]
    ]
    assert recorded == counts


def test_read_only_commands_create_nothing(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        for command in ("%agent status", "%agent sessions", "%agent transcript", "%agent show", "%agent"):
            k.run(command)
    assert list(tmp_path.glob("*.sqlite*")) == []


def test_a_second_kernel_on_the_same_notebook_says_the_session_is_in_use_and_forks_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path) as first:
        first.run("%load_ext nbagent")
        first.run("%followup hello")
        first.run("%agent wait")
        (sid,) = session_ids(db)
        with Kernel(tmp_path) as second:
            second.run("%load_ext nbagent")
            result = second.run_all(["%agent status"])
            line = (
                f"nbagent: the latest session {sid[:8]} in work.nbagent.sqlite is in use by another kernel; "
                "`%agent new` starts another session here, `%agent resume ID` continues an earlier one "
                "(see `%agent sessions`), `%agent --db PATH` uses another file\n"
            )
            assert (
                result.text(0)
                == line
                + f"no session open in this kernel · file work.nbagent.sqlite holds 1 session; the latest "
                f"({sid[:8]}) is open in another kernel\n"
            )
            assert session_ids(db) == [sid]
            writes = second.run_all(["%inject a note"], timeout=30)
            assert usage_error(writes, 0) == line.removeprefix("nbagent: ").strip().join(["nbagent: ", ""])
            assert session_ids(db) == [sid]
            assert "nbagent: new session " in second.run("%agent new")  # the way out, on purpose
            assert len(session_ids(db)) == 2


def test_a_session_file_that_cannot_be_used_is_one_line_with_the_path_and_the_way_out(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.sqlite"
    folder.mkdir()
    not_a_folder = tmp_path / "notes.txt"
    not_a_folder.write_text("a file")
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        result = k.run_all([f"%agent --db {folder}", "%inject hello there"])
        result2 = k.run_all([f"%agent --db {not_a_folder / 'x.sqlite'}", "%inject hello there"])
        assert usage_error(result, 1) == (
            f"nbagent cannot use the session file {folder}: it is a folder, not a file; choose another "
            "with `%agent --db PATH` (or the NBAGENT_DB environment variable)"
        )
        assert usage_error(result2, 1) == (
            f"nbagent cannot use the session file {not_a_folder / 'x.sqlite'}: notes.txt is a file, not a "
            "folder; choose another with `%agent --db PATH` (or the NBAGENT_DB environment variable)"
        )
        for run in (result, result2):
            assert run.text(1).count("\n") == 1  # one line, no traceback


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with Kernel(tmp_path) as k:
            k.run("%load_ext nbagent")
            result = k.run_all([f"%agent --db {locked / 'x.sqlite'}", "%inject hello there"])
            assert "its folder is not writable; choose another with `%agent --db PATH`" in usage_error(
                result, 1
            )
    finally:
        locked.chmod(0o755)


def test_the_expression_or_text_rule() -> None:
    assert [classify(t) for t in ("df", "df.head(20)", 'data["x"]', "N/A")] == ["expression"] * 4
    assert [classify(t) for t in ("df.head(", 'data["x"', "sum(df.x", '"""notes')] == ["unfinished"] * 4
    assert [classify(t) for t in ("prices are in EUR", "don't convert", "units: boxes", "df.")] == [
        "text"
    ] * 4


def test_an_unfinished_expression_is_refused_and_text_is_queued(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("import pandas as pd; df = pd.DataFrame({'a': [1]})")
        result = k.run_all(["%inject df.head(", "%inject prices are in EUR"], stop_on_error=False)
        assert usage_error(result, 0) == (
            "`df.head(` is an unfinished Python expression (it ends inside a bracket or a string): finish it, "
            "or send it as text with --label LABEL or in a %%inject cell"
        )
        assert "queued cell: 17 chars" in result.text(1)
    texts = [
        m["content"][0]["text"]
        for e in read_events(tmp_path / "work.nbagent.sqlite")
        for m in e.data["inserted"]
    ]
    assert texts == ["prices are in EUR"]


def test_missing_extras_give_the_install_line_when_the_choice_is_made(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("import sys, pandas as pd; df = pd.DataFrame({'a': [1, 2]})")
        # as if these were not installed: importing them fails
        k.run("for name in ('narwhals', 'openai', 'anthropic', 'anywidget'): sys.modules[name] = None")
        result = k.run_all(
            [
                "%inject df",
                "%agent model openai:gpt-4.1",
                "%agent model anthropic:claude-sonnet-4-5",
                "%agent show",
            ],
            stop_on_error=False,
        )
        assert usage_error(result, 0) == (
            "summarizing a pandas frame needs narwhals 2 or later, which is not installed; "
            'pip install "nbagent[dataframes]"'
        )
        assert usage_error(result, 1) == (
            "model 'openai:gpt-4.1' needs the openai package, which is not installed: "
            'pip install "nbagent[providers]"; the model was not changed'
        )
        assert (
            'needs the anthropic package, which is not installed: pip install "nbagent[providers]"'
            in usage_error(result, 2)
        )
        assert usage_error(result, 3) == (
            'the nbagent widgets need anywidget, which is not installed: pip install "nbagent[notebook]" '
            "(or use %agent transcript)"
        )
        assert list(tmp_path.glob("*.sqlite*")) == []  # none of it opened a session


def test_the_cli_quickstart_names_the_missing_extra(tmp_path: Path) -> None:
    code = "import sys; sys.modules['nbformat'] = None; from nbagent.__main__ import main; main(['quickstart', '--headless'])"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == (
        'nbagent: running the quickstart headless needs nbformat, which is not installed: pip install "nbagent[notebook]"\n'
    )
    assert list(tmp_path.iterdir()) == []  # nothing copied before the check


FAILING = """
from nbagent.models import Response, ScriptedModel
from nbagent.notebook import current_agent

current_agent().set_model(ScriptedModel([Response(failure="AUTH")]))
"""


def test_a_wait_whose_run_ends_in_error_fails_the_cell_with_one_line(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(FAILING)
        result = k.run_all(["%followup --wait hello", "print('not reached')"])
        reply = result.reply(0)
        assert (reply["status"], reply["ename"]) == ("error", "RunFailedError")
        assert reply["evalue"].startswith("turn 1 ended in error: AUTH: ")
        assert reply["traceback"] == [f"RunFailedError: {reply['evalue']}"]
        assert result.reply(1)["status"] == "aborted"  # stop_on_error: Run All stops there


def write_notebook(path: Path, cells: list[str]) -> None:
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def nbconvert(cwd: Path, *notebooks: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NBAGENT_DB", "JPY_SESSION_NAME", "ANTHROPIC_API_KEY")
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--execute",
            "--to",
            "notebook",
            "--output-dir",
            "out",
            *notebooks,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_nbconvert_puts_each_notebooks_session_beside_it(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        write_notebook(tmp_path / f"{name}.ipynb", ["%load_ext nbagent", f"%followup --wait from {name}"])
    for name in ("alpha", "beta"):
        assert nbconvert(tmp_path, f"{name}.ipynb").returncode == 0
    for name in ("alpha", "beta"):
        texts = [
            e.data["content"][0]["text"]
            for e in read_events(tmp_path / f"{name}.nbagent.sqlite")
            if e.type == "user/message"
        ]
        assert texts == [f"from {name}"]
    assert not (tmp_path / "nbagent.sqlite").exists()


def test_notebooks_whose_kernel_cannot_know_them_never_share_a_session(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        write_notebook(tmp_path / f"{name}.ipynb", ["%load_ext nbagent", f"%followup --wait from {name}"])
    done = nbconvert(tmp_path, "alpha.ipynb", "beta.ipynb")  # one run, two notebooks: which is which?
    assert done.returncode == 0, done.stderr
    first, second = session_ids(tmp_path / "nbagent.sqlite")
    assert [
        e.data["content"][0]["text"]
        for e in read_events(tmp_path / "nbagent.sqlite", first)
        if e.type == "user/message"
    ] == ["from alpha"]
    assert [
        e.data["content"][0]["text"]
        for e in read_events(tmp_path / "nbagent.sqlite", second)
        if e.type == "user/message"
    ] == ["from beta"]
    out = json.loads((tmp_path / "out" / "beta.ipynb").read_text())
    said = "".join("".join(o.get("text", "")) for o in out["cells"][1]["outputs"])
    assert "this kernel cannot tell which notebook it runs, so the session is not beside it" in said


def test_nbconvert_fails_on_a_wait_whose_run_ends_in_error(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "failing.ipynb",
        ["%load_ext nbagent", "%agent model anthropic:claude-sonnet-4-5", "%followup --wait hello"],
    )
    done = nbconvert(tmp_path, "failing.ipynb")
    assert done.returncode != 0
    assert (
        "RunFailedError: turn 1 ended in error: AUTH: anthropic:claude-sonnet-4-5: no API key" in done.stderr
    )
    assert "Traceback" not in done.stderr.split("RunFailedError", 1)[1]


def nbagent_command() -> Path:
    return Path(sys.executable).parent / "nbagent"


def test_the_command_line_help_version_and_bare_command() -> None:
    for argv, prog in (
        ([str(nbagent_command())], "nbagent"),
        ([sys.executable, "-m", "nbagent"], "python -m nbagent"),
    ):
        bare = subprocess.run(argv, capture_output=True, text=True)
        helped = subprocess.run([*argv, "--help"], capture_output=True, text=True)
        assert (bare.returncode, helped.returncode) == (0, 0)
        assert bare.stdout == helped.stdout
        assert helped.stdout.startswith(f"usage: {prog} [-h] [--version] COMMAND ...\n")
        assert "``" not in helped.stdout and "demo" in helped.stdout and "quickstart" in helped.stdout
        version = subprocess.run([*argv, "--version"], capture_output=True, text=True)
        assert version.stdout.startswith(f"{prog} 0.")


def test_the_demo_says_which_turn_answered(capsys: pytest.CaptureFixture[str]) -> None:
    from nbagent.__main__ import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "the followup ran as turn 1 (completed); the answer:\necho: I received 2 messages." in out
    assert "(1,)" not in out
    # the terminal gets plain text: no path of a file deleted at the end, no Markdown escapes
    assert "in a temporary file, deleted when the demo ends" in out and "nbagent-demo-" not in out
    assert "\n1. user · cell · Prices are in EUR.\n" in out and "1\\." not in out
    assert "no usage (offline model) · cost none" in out  # echo makes up no usage
