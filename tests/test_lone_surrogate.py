"""A ``propose_cell`` call whose arguments hold a JSON ``\\ud800`` escape (issue 32, item 2): the log
keeps the arguments as the model sent them, and every reader and painter shows U+FFFD instead of
failing: the transcript (``%agent transcript``, ``nbagent transcript``), the timeline bundle and its
HTML (``%agent show``, the live cell), the approval's code, and the lab server's timeline, window and
transcript."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventtrace import run
from IPython.core.interactiveshell import InteractiveShell

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook.tools.approvals import Question
from nbagent.notebook.tools.kernel_tools import NotebookTools
from nbagent.views import timeline_html, timeline_json
from nbagent.views.markdown import transcript

ARGUMENTS = '{"code": "x = \'a\\ud800b\'", "note": "n\\udfffote"}'
"""Valid JSON text (ASCII) whose strings decode to lone surrogates."""


async def inline(fn: Any) -> Any:
    return fn()


def write(path: Path) -> str:
    shell = InteractiveShell.instance()
    model = ScriptedModel([Response(tool_calls=[ToolCall("propose_cell", ARGUMENTS, id="a")]), "over to you"])

    async def main() -> str:
        agent = nbagent.open_session(path, model=model)
        NotebookTools(shell, on_main=inline).equip(agent)
        await agent.run("propose something")
        await agent.close()
        return agent.session_id

    return run(main())


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "s.nbagent.sqlite"
    return path, write(path)


def test_the_log_keeps_the_arguments_as_sent(logged: tuple[Path, str]) -> None:
    path, sid = logged
    calls = [e for e in nbagent.read_events(path, sid) if e.type == "tool/call"]
    assert calls and calls[0].data["arguments"] == ARGUMENTS


def test_every_view_shows_the_replacement_character(logged: tuple[Path, str]) -> None:
    path, sid = logged
    events = nbagent.read_events(path, sid)
    for fmt in ("md", "html"):
        text = transcript(events) if fmt == "md" else timeline_html(timeline_json(events))
        text.encode("utf-8")
        assert "a\ufffdb" in text
    bundle = orjson.dumps(timeline_json(events))  # what %agent show and the live cell send
    assert "a\ufffdb" in bundle.decode()
    assert Question("q", "run_code", "c", '{"code": "\\ud800"}', turn=1).code == "\ufffd"


def test_nbagent_transcript_prints_it(logged: tuple[Path, str]) -> None:
    path, _ = logged
    done = subprocess.run(
        [sys.executable, "-m", "nbagent", "transcript", str(path)], capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert "a\ufffdb" in done.stdout.decode("utf-8")


pytest.importorskip("pytest_jupyter")
from pytest_jupyter.jupyter_server import *  # noqa: F403, E402


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}


def test_the_lab_server_answers_with_it(jp_root_dir: Path, jp_fetch: Any, jp_asyncio_loop: Any) -> None:
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write(path)

    async def fetch(what: str, **params: Any) -> str:
        r = await jp_fetch("nbagent", "api", "sessions", sid, what, params={"file": path.name, **params})
        assert r.code == 200
        return r.body.decode("utf-8")

    asyncio.set_event_loop(jp_asyncio_loop)
    for what, params in (
        ("timeline", {}),
        ("timeline", {"window": "5"}),
        ("transcript", {}),
        ("transcript", {"format": "html"}),
    ):
        body = jp_asyncio_loop.run_until_complete(fetch(what, **params))
        shown = json.loads(body) if what == "timeline" else body
        assert "a\ufffdb" in (json.dumps(shown, ensure_ascii=False) if what == "timeline" else shown), (
            what,
            params,
        )


@pytest.mark.kernel
def test_followup_wait_show_and_transcript_in_a_kernel(tmp_path: Path) -> None:
    from kernel_helpers import Kernel

    setup = (
        "import nbagent.notebook.tools.front_end_cells as front_end_cells\n"
        "front_end_cells.TIMEOUT = 0.01  # no front end answers here: propose as IPython's next input\n"
        "from nbagent.models import Response, ScriptedModel, ToolCall\n"
        "from nbagent.notebook import current_agent\n"
        "current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('propose_cell', "
        f"{ARGUMENTS!r}, id='a')]), 'proposed']))\n"
    )
    with Kernel(tmp_path, "work.ipynb") as k:
        outputs = [k.run("%load_ext nbagent"), k.run(setup)]
        outputs.append(k.run("%followup --wait plot it"))
        outputs.append(k.run("%agent status"))
        outputs.append(k.run("%agent transcript"))
        outputs.append(k.run("%agent show"))
        assert k.run("print(6 * 7)") == "42\n"
    shown = "".join(outputs)
    assert "UnicodeEncodeError" not in shown and "Traceback" not in shown and "Error" not in shown, shown
    assert "running" not in outputs[3], outputs[3]
    assert "a\ufffdb" in outputs[4]
