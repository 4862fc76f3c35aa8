"""The magics in an in-process IPython shell (no kernel): the agent runs on the agent loop's thread,
and these tests wait for it the way a cell does, with ``KernelSession.wait_idle``. ``--wait``, the
interrupt and everything about real kernels are in test_notebook_kernel.py."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from kernel_helpers import ipython_shell, magics, read_events, session_ids

from nbagent.testing import check_invariants


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)


def kinds(events) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.data["source"]["kind"] for e in events if e.type == "user/message"]


def test_loading_is_fast_and_imports_no_pandas_provider_sdk_widget_or_nest_asyncio(tmp_path: Path) -> None:
    code = (
        "import time, sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "sh = InteractiveShell.instance()\n"
        "t = time.perf_counter(); sh.run_line_magic('load_ext', 'nbagent.notebook'); t = time.perf_counter() - t\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'polars', 'narwhals', 'openai',"
        " 'anthropic', 'anywidget', 'ipywidgets', 'nest_asyncio', 'nbagent.widgets'})\n"
        "print(heavy, t)\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    heavy, _seconds = out.split("] ")
    assert heavy == "["  # the load time itself is a benchmark figure, never asserted here


def test_inject_queues_without_running_the_model_and_prints_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    nb = tmp_path / "analysis.ipynb"
    nb.write_text("{}")
    with ipython_shell(nb) as sh:
        sh.user_ns["sales"] = pd.DataFrame({"region": ["n", "s"], "amount": [1.5, 2.5]})
        capsys.readouterr()
        sh.run_cell("%inject sales")
        out = capsys.readouterr().out.strip().splitlines()
        assert out[0].startswith("nbagent: new session ")
        assert len(out) == 3 and out[1].startswith("nbagent: for git, the .gitignore line")
        assert out[2].startswith("queued dataframe sales · 2×2 · pandas: ")
        assert "chars, ~" in out[2] and "tokens" in out[2]
        assert "inbox 1 pending" in out[2] and "the model has not run" in out[2]
        agent = magics(sh).session.agent
        assert agent.status == "idle"
        assert [e.type for e in agent.events] == ["agent/inbox/spliced"]

    events = read_events(tmp_path / "analysis.nbagent.sqlite")
    message = events[0].data["inserted"][0]
    assert message["source"]["kind"] == "dataframe"
    assert message["source"]["name"] == "sales"
    assert message["source"]["cell"]["execution_count"] >= 1


def test_inject_text_objects_and_last_error_get_their_source_kinds(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.user_ns["config"] = {"threshold": 3, "mode": "fast"}
        sh.run_cell("%inject prices are in USD, don't convert them")
        sh.run_cell("%inject --label units metres")
        sh.run_cell("%inject config")
        sh.run_cell("%%inject --label notes\nline one\nline two?\n")
        sh.run_cell("{}['missing']")
        sh.run_cell("%inject --last-error")
        agent = magics(sh).session.agent
        pending = agent.inbox.next_step
        assert [m.source["kind"] for m in pending] == ["cell", "cell", "variable", "cell", "error"]
        assert pending[0].plain_text == "prices are in USD, don't convert them"
        assert dict(pending[1].source)["label"] == "units" and pending[1].plain_text == "metres"
        assert pending[2].source["name"] == "config" and "threshold" in pending[2].plain_text
        assert pending[3].plain_text == "line one\nline two?\n"
        assert pending[4].source["ename"] == "KeyError" and "missing" in pending[4].plain_text

    assert capsys.readouterr().out.count("queued ") == 5


def test_bad_arguments_raise_usage_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.user_ns["n"] = 3
        for magic, line in [
            ("inject", "--rows x df"),
            ("inject", "--bogus text"),
            ("inject", "--last-error"),
            ("inject", ""),
            ("inject", "--rows 2 n"),
            ("inject", "undefined_name.attr"),
            ("followup", ""),
            ("agent", "bogus"),
            ("agent", "resume"),
            ("agent", "status extra"),
            ("agent", "model no-such-provider:x"),
            ("agent", "resume doesnotexist"),
        ]:
            with pytest.raises(UsageError):
                sh.run_line_magic(magic, line)


def test_followup_returns_at_once_and_the_cell_output_follows_the_turn(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.run_cell("%inject some context")
        sh.run_cell("%followup what did you get?")
        m = magics(sh)
        agent = m.session.agent
        assert agent.status == "running"
        view = m.session.views[-1]
        m.session.wait_idle()
        view.refresh()
        assert view.final
        text = view.view.answer
        assert text.startswith("echo: I received 2 messages.")
        assert "user · cell · some context" in text
        assert "user · user · what did you get?" in text

    out = capsys.readouterr().out
    assert "followup «what did you get?» · turn 1 · done" in out
    assert "turn 1: completed" in out


def test_a_session_is_resumed_after_the_extension_is_reloaded_and_new_starts_fresh(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    notebook = tmp_path / "analysis.ipynb"
    with ipython_shell(notebook) as sh:
        sh.run_cell("%followup first")
        first = magics(sh).session.agent
        magics(sh).session.wait_idle()
        sid = first.session_id
    capsys.readouterr()
    with ipython_shell(notebook) as sh:
        sh.run_cell("%agent status")
        out = capsys.readouterr().out
        assert out.startswith(
            f"nbagent: resumed session {sid[:8]} from analysis.nbagent.sqlite (1 turn, last active"
        )
        assert "status: idle" in out and "turns: 1" in out
        sh.run_cell("%agent new")
        assert magics(sh).session.agent.session_id != sid
        sh.run_cell("%agent sessions")
        listing = capsys.readouterr().out
        assert f"  {sid[:8]}     1 turn    " in listing  # one turn, not "1 turns"
        assert listing.count("\n") == 4
        sh.run_cell(f"%agent resume {sid[:6]}")
        assert magics(sh).session.agent.session_id == sid


def test_a_kernel_that_does_not_know_its_notebook_never_resumes_another_ones_session(
    tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:  # no notebook path: the shared nbagent.sqlite of the folder
        sh.run_cell("%followup from the first notebook")
        magics(sh).session.wait_idle()
        first = magics(sh).session.agent.session_id
    capsys.readouterr()
    with ipython_shell() as sh:
        sh.run_cell("%agent status")
        assert capsys.readouterr().out.startswith("no session open · file nbagent.sqlite")
        sh.run_cell("%inject from the second notebook")
        out = capsys.readouterr().out
        second = magics(sh).session.agent.session_id
        assert second != first
        assert out.splitlines()[0] == (
            f"nbagent: new session {second[:8]} in nbagent.sqlite, the shared file of this folder (model echo); "
            "this kernel does not know "
            "its notebook, so it does not continue the file's earlier sessions (`%agent sessions` lists "
            "them, `%agent resume ID` continues one)"
        )
        sh.run_cell(f"%agent resume {first[:8]}")  # the way to continue it, on purpose
        assert magics(sh).session.agent.session_id == first
    assert session_ids(tmp_path / "nbagent.sqlite") == [first, second]


def test_model_switch_cancel_close_and_db_override(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.run_cell("%agent --db other.sqlite")
        sh.run_cell("%inject x y z")
        m = magics(sh)
        assert m.session.agent.path == tmp_path / "other.sqlite"
        sh.run_cell("%agent model echo")
        sh.run_cell("%agent cancel --keep-inbox")
        assert len(m.session.agent.inbox.next_step) == 1
        sh.run_cell("%agent cancel")
        assert len(m.session.agent.inbox.next_step) == 0
        sh.run_cell("%agent close")
        assert m.session.current() is None

    out = capsys.readouterr().out
    assert "later turns use echo" in out
    assert "pending messages kept" in out and "pending messages canceled" in out
    assert "closed session" in out
    assert not (tmp_path / "nbagent.sqlite").exists()


def test_transcript_tells_typed_prompts_from_injected_context(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.run_cell("%inject the data is synthetic")
        sh.run_cell("%followup summarize")
        magics(sh).session.wait_idle()
        sh.run_cell("%inject later note")
        capsys.readouterr()
        sh.run_cell("%agent transcript")
        check_invariants(magics(sh).session.agent.events)

    out = capsys.readouterr().out
    assert "## Turn 1" in out
    assert "📎 **cell** · 21 B\n\n```\nthe data is synthetic\n```" in out
    assert "**You** · followup\n\n> summarize" in out
    assert "## Pending (the model has not seen these yet)" in out and "later note" in out


def test_a_question_mark_ends_the_message_instead_of_asking_ipython_for_help(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.run_cell("%inject is this text?")
        assert magics(sh).session.agent.inbox.next_step[0].plain_text == "is this text?"


def test_unload_removes_the_magics_and_closes_the_session(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        sh.run_cell("%inject hello there")
        agent = magics(sh).session.agent
    assert agent.closed
    assert "inject" not in sh.magics_manager.magics["line"]
    assert "AgentMagics" not in sh.magics_manager.registry


def test_agent_show_displays_the_inbox_and_timeline_widgets(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("anywidget")

    with ipython_shell() as sh:
        sh.run_cell("%inject hi there")
        assert sh.run_cell("%agent show").success

    out = capsys.readouterr().out
    assert "Inbox · 1 pending · agent idle" in out and "Timeline · 0 turns" in out  # the text forms


def user_texts(events) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.data["content"][0]["text"] for e in events if e.type == "user/message"]


def test_the_cell_forms_send_the_cell_body_verbatim_as_one_message(tmp_path) -> None:  # type: ignore[no-untyped-def]
    body = "first line\n    indented second\n\nwhat about the fourth?\n  trailing spaces kept  "

    with ipython_shell() as sh:
        m = magics(sh)
        agent = m.session.ensure()
        assert sh.run_cell(f"%%followup\n{body}\n").success
        m.session.wait_idle()
        assert sh.run_cell(f"%%steer\n\n{body}\n\n").success
        m.session.wait_idle()
        assert user_texts(agent.events) == [body, body]
        assert kinds(agent.events) == ["user", "user"]
        assert [e.data["turn"] for e in agent.events if e.type == "turn/start"] == [1, 2]
        check_invariants(agent.events)


def test_the_cell_forms_take_options_on_the_line_and_refuse_text_there_or_an_empty_body(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell() as sh:
        for verb in ("followup", "steer"):
            with pytest.raises(UsageError, match="in the cell body"):
                sh.run_cell_magic(verb, "hello", "body")
            with pytest.raises(UsageError, match="needs a message"):
                sh.run_cell_magic(verb, "", "\n  \n")
            with pytest.raises(UsageError):
                sh.run_cell_magic(verb, "--bogus", "body")
        assert magics(sh).session.agent is None  # nothing was delivered, so no session was opened


def test_a_steer_cell_during_a_running_turn_lands_in_that_turns_next_step(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nbagent.models import Response, ScriptedModel

    requested, gate = threading.Event(), threading.Event()

    async def slow(request):  # type: ignore[no-untyped-def]
        requested.set()
        await asyncio.to_thread(gate.wait)
        return Response("first answer")

    model = ScriptedModel([slow, "second answer"])

    with ipython_shell() as sh:
        m = magics(sh)
        agent = m.session.ensure()
        agent.set_model(model)
        sh.run_cell("%followup start the analysis")
        assert requested.wait(120)
        assert sh.run_cell("%%steer\nuse the 2024 data\nand skip nulls\n").success
        steer_view = m.session.views[-1]
        assert agent.inbox.next_step[0].plain_text == "use the 2024 data\nand skip nulls"
        gate.set()
        m.session.wait_idle()
        steer_view.refresh()
        assert steer_view.turn == 1 and steer_view.final
        assert steer_view.view.headline == "steer «use the 2024 data» · turn 1 · done"
        events = agent.events
        check_invariants(events, inbox=agent.inbox, requests=model.requests)
        steps = [
            (
                e.type,
                e.data.get("step"),
                e.data["content"][0]["text"] if e.type == "user/message" else None,
            )
            for e in events
            if e.type in ("turn/start", "step/start", "user/message", "turn/end")
        ]
        assert steps == [
            ("turn/start", None, None),
            ("step/start", 1, None),
            ("user/message", None, "start the analysis"),
            ("step/start", 2, None),
            ("user/message", None, "use the 2024 data\nand skip nulls"),
            ("turn/end", None, None),
        ]
        assert [x.plain_text for x in model.requests[1].messages] == [
            "start the analysis",
            "first answer",
            "use the 2024 data\nand skip nulls",
        ]


def test_wait_is_a_flag_before_or_after_the_message_and_plain_text_after_double_dash() -> None:
    from nbagent.notebook.magics.arguments import split_options

    flags = ("--wait",)
    assert split_options("What stands out? --wait", (), flags) == ("--wait", "What stands out?")
    assert split_options("--wait What stands out?", (), flags) == ("--wait", "What stands out?")
    assert split_options("What stands out?", (), flags) == ("", "What stands out?")
    assert split_options("-- explain the --wait", (), flags) == ("", "explain the --wait")


def test_resume_takes_the_latest_or_a_prefix_of_four_and_the_gitignore_line_is_said_once(
    tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    with ipython_shell(tmp_path / "nb.ipynb") as sh:
        sh.run_line_magic("inject", "some context")
        first = magics(sh).session.agent.session_id
        sh.run_line_magic("agent", "new")
        second = magics(sh).session.agent.session_id
        said = capsys.readouterr().out
        assert said.count("nbagent: for git, the .gitignore line `*.nbagent.sqlite-*`") == 1
        with pytest.raises(UsageError, match=f"session id '{first[:3]}' is too short: give at least 4"):
            sh.run_line_magic("agent", f"resume {first[:3]}")
        sh.run_line_magic("agent", f"resume {first[:4]}")
        assert magics(sh).session.agent.session_id == first
        sh.run_line_magic("agent", "resume")  # no id: the latest
        assert magics(sh).session.agent.session_id == second
        magics(sh).session.close()
