"""The magics in a real ipykernel: a kernel interrupt during ``--wait``, and a kernel that dies in the
middle of a turn, then resumes with the turn repaired."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events

from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel

SLOW_MODEL = """
import asyncio
from nbagent.models import Response, ScriptedModel
from nbagent.notebook import current_agent

async def slow(request):
    await asyncio.sleep(30)
    return Response("too late")

current_agent().set_model(ScriptedModel([slow]))
"""

SLOW_TOOL = """
import asyncio, nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent

@nbagent.tool
async def deploy(target: str) -> str:
    \"\"\"Deploy slowly.\"\"\"
    await asyncio.sleep(30)
    return "deployed"

agent = current_agent()
agent.tools[deploy.name] = deploy
agent.set_model(ScriptedModel([Response(tool_calls=[ToolCall("deploy", {"target": "prod"})])]))
"""


def wait_for_event(db: Path, event_type: str, timeout: float = 20) -> None:
    """Poll the session file (as another reader would) until an event of ``event_type`` is there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if any(e.type == event_type for e in read_events(db)):
                return
        except Exception:  # the file or its first session row is not written yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"no {event_type} in {db} after {timeout}s")


def test_interrupting_the_kernel_during_wait_cancels_the_turn_cleanly(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(SLOW_MODEL)
        msg_id = k.send("%followup --wait take your time")
        wait_for_event(tmp_path / "work.nbagent.sqlite", "step/start")
        time.sleep(0.2)
        k.km.interrupt_kernel()
        reply = k.kc.get_shell_msg(timeout=20)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        status = k.run("%agent status")
        assert "status: idle" in status
    events = read_events(tmp_path / "work.nbagent.sqlite")
    check_invariants(events)
    ends = [e.data for e in events if e.type == "turn/end"]
    assert ends == [{"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "interrupt"}}}]


def test_followup_returns_while_the_turn_runs_and_a_dead_kernel_is_repaired_on_resume(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(SLOW_TOOL)
        started = time.perf_counter()
        out = k.run("%followup ship it")
        assert time.perf_counter() - started < 5
        assert "followup «ship it» · turn 1 · running" in out
        wait_for_event(tmp_path / "work.nbagent.sqlite", "tool/call")
        assert "status: running" in k.run("%agent status")
        k.restart()
        k.run("%load_ext nbagent")
        out = k.run("%agent status")
        assert "nbagent: resumed session " in out
        assert "its last turn was cut off by the kernel stopping and has been closed" in out
        assert "status: idle" in out
    events = read_events(tmp_path / "work.nbagent.sqlite")
    check_invariants(events)
    tail = [
        (e.type, e.data.get("error", {}).get("code") or e.data.get("reason", {}).get("kind"))
        for e in events[-3:]
    ]
    assert tail == [("tool/result", "TOOL_OUTCOME_UNKNOWN"), ("step/end", None), ("turn/end", "interrupted")]


SLOW_TEXT = """
from nbagent.models import Response, ScriptedModel
from nbagent.notebook import current_agent

current_agent().set_model(ScriptedModel([
    Response("first answer, streamed slowly", chunk_size=6, chunk_delay=0.1),
    Response("second answer, streamed slowly", chunk_size=6, chunk_delay=0.1),
]))
"""


def test_cell_forms_with_wait_block_until_the_run_ends_and_send_the_body(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(SLOW_TEXT)
        started = time.perf_counter()
        out = k.run("%%followup --wait\nfirst line\n  second line?\n")
        assert time.perf_counter() - started >= 0.4  # five chunks 0.1 s apart: the cell waited
        assert "followup «first line» · turn 1 · done" in out
        assert "first answer, streamed slowly" in out and "turn 1: completed" in out
        assert "status: idle" in k.run("%agent status")
        out = k.run("%%steer --wait\nthird\nfourth\n")
        assert "steer «third» · turn 2 · done" in out and "turn 2: completed" in out
    events = read_events(tmp_path / "work.nbagent.sqlite")
    check_invariants(events)
    texts = [e.data["content"][0]["text"] for e in events if e.type == "user/message"]
    assert texts == ["first line\n  second line?", "third\nfourth"]
