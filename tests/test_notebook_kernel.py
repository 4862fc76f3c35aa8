"""The magics in a real ipykernel (7 in this interpreter, 6 in the one scripts/test.sh prepares): the
agent runs on its own loop thread, so ``--wait`` blocks on a threading primitive, queued cells run
after it in order, a kernel interrupt cancels the turn, a turn streams into its own cell while other
cells run, widget messages and main-thread work are served while a cell waits, and a kernel that dies
in the middle of a turn is repaired on resume."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kernel_helpers import KERNELS, Kernel, read_events, wait_for_events

from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel

SLOW_MODEL = """
import asyncio
from nbagent.models import Response, ScriptedModel
from nbagent.notebook import current_agent

async def slow(request):
    await asyncio.sleep(300)
    return Response("too late")

current_agent().set_model(ScriptedModel([slow] * {n}))
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
agent.add_tool(deploy)
agent.set_model(ScriptedModel([Response(tool_calls=[ToolCall("deploy", {"target": "prod"})])]))
"""


def interrupt_and_read_reply(k: Kernel, msg_id: str) -> dict:
    """Interrupt the kernel; return the interrupted request's reply once the kernel is idle again."""
    k.km.interrupt_kernel()
    reply = k.kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    k.wait_idle(msg_id)
    return reply["content"]


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_interrupting_the_kernel_during_wait_cancels_the_turn_cleanly(
    tmp_path: Path, kernel_python: str | None
) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path, python=kernel_python) as k:
        k.run("%load_ext nbagent")
        k.run(SLOW_MODEL.format(n=1))
        msg_id = k.send("%followup --wait take your time")
        # the wait installs its SIGINT handler before it hands the run to the agent loop, so once the
        # step has started the interrupt can only reach that handler
        wait_for_events(db, "step/start")
        content = interrupt_and_read_reply(k, msg_id)
        assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt"
        assert "the turn was cancelled (aborted)" in content["evalue"]
        assert content["traceback"] == ["KeyboardInterrupt: the turn was cancelled (aborted)"]  # one line
        status = k.run("%agent status")
        assert "status: idle" in status
    events = read_events(db)
    check_invariants(events)
    ends = [e.data for e in events if e.type == "turn/end"]
    assert ends == [{"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "interrupt"}}}]


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_an_interrupt_during_wait_then_the_next_cell_twenty_times_over(
    tmp_path: Path, kernel_python: str | None
) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    rounds = 20
    with Kernel(tmp_path, python=kernel_python) as k:
        k.run("%load_ext nbagent")
        k.run(SLOW_MODEL.format(n=rounds))
        for i in range(1, rounds + 1):
            msg_id = k.send(f"%followup --wait round {i}")
            wait_for_events(db, "step/start", count=i)
            content = interrupt_and_read_reply(k, msg_id)
            assert (i, content["status"], content["ename"]) == (i, "error", "KeyboardInterrupt")
            assert k.run(f"print('after round', {i})") == f"after round {i}\n"
        assert "status: idle" in k.run("%agent status")
    events = read_events(db)
    check_invariants(events)
    reasons = [e.data["reason"] for e in events if e.type == "turn/end"]
    assert reasons == [{"kind": "aborted", "reason": {"kind": "interrupt"}}] * rounds


QUEUE_SETUP = """
import asyncio, nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent

@nbagent.tool
async def crunch(n: int) -> str:
    \"\"\"A slow computation.\"\"\"
    await asyncio.sleep(1.5)
    return f"crunched {n}"

agent = current_agent()
agent.add_tool(crunch)
agent.set_model(ScriptedModel([
    Response(tool_calls=[ToolCall("crunch", {"n": 1})]), "first done",
    Response(tool_calls=[ToolCall("crunch", {"n": 2})]), "second done",
]))
"""


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_cells_queued_behind_a_wait_on_a_slow_tool_run_after_it_in_order(
    tmp_path: Path, kernel_python: str | None
) -> None:
    with Kernel(tmp_path, python=kernel_python) as k:
        k.run("%load_ext nbagent")
        k.run(QUEUE_SETUP)
        cells = [
            "%followup --wait first",
            "x = 1",
            "x += 1; print('x is', x)",
            "%followup --wait second",
            "print('after both:', x, agent.status)",
        ]
        result = k.run_all(cells)
        assert [r.parent for r in result.replies] == result.ids
        assert [result.reply(i)["status"] for i in range(len(cells))] == ["ok"] * len(cells)
        counts = [result.reply(i)["execution_count"] for i in range(len(cells))]
        assert counts == list(range(counts[0], counts[0] + len(cells)))
        assert "turn 1: completed" in result.text(0) and "crunched 1" in result.text(0)
        assert result.text(2) == "x is 2\n"
        assert "turn 2: completed" in result.text(3) and "crunched 2" in result.text(3)
        assert result.text(4) == "after both: 2 idle\n"
        # the second wait began only after the first had ended
        assert result.window(0)[1] <= result.window(1)[0] <= result.window(3)[0]
        assert k.alive()
    events = read_events(tmp_path / "work.nbagent.sqlite")
    check_invariants(events)
    assert [e.data["reason"]["kind"] for e in events if e.type == "turn/end"] == ["completed", "completed"]


STREAMING = """
from nbagent.models import Response, ScriptedModel
from nbagent.notebook import current_agent

words = " ".join(f"w{i:03}" for i in range(300))  # 300 chunks 0.05 s apart: about 15 s of streaming
current_agent().set_model(ScriptedModel([Response(words, chunk_size=5, chunk_delay=0.05)]))
"""


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_a_turn_keeps_streaming_into_its_own_cell_while_another_cell_sleeps_ten_seconds(
    tmp_path: Path, kernel_python: str | None
) -> None:
    with Kernel(tmp_path, python=kernel_python) as k:
        k.run("%load_ext nbagent")
        k.run(STREAMING)
        result = k.run_all(["%followup tell me a long story", "import time; time.sleep(10)"])
        assert [result.reply(i)["status"] for i in (0, 1)] == ["ok", "ok"]
        (display_id,) = result.display_ids(0)
        start, end = result.window(1)  # the sleeping cell, as the client's clock saw it
        during = [u for u in result.updates(display_id) if start <= u.at <= end]
        # every fifth of the sleeping cell brought updates of the first cell's view ...
        fifth = (end - start) / 5
        per_window = [
            sum(start + i * fifth <= u.at < start + (i + 1) * fifth for u in during) for i in range(5)
        ]
        assert all(n >= 1 for n in per_window), per_window
        # ... with more of the answer each time, and none of it appeared in the sleeping cell's output
        lengths = [len(u.content["data"]["text/plain"]) for u in during]
        assert lengths == sorted(lengths) and lengths[-1] > lengths[0]
        assert not [m for m in result.outputs(1) if m.type in ("display_data", "stream")]
        k.run("%agent wait")
        assert "status: idle" in k.run("%agent status")


REMOVE_SETUP = """
import asyncio, nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent

agent = current_agent()
removed = asyncio.Event()
agent.on("inbox/discarded", lambda notice: removed.set())

@nbagent.tool
async def hold() -> str:
    \"\"\"Wait until the user removes a pending message.\"\"\"
    await asyncio.wait_for(removed.wait(), 60)
    return "a pending message was removed"

agent.add_tool(hold)
agent.set_model(ScriptedModel([Response(tool_calls=[ToolCall("hold", {})]), "released"]))
"""


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_the_inbox_remove_button_works_while_a_wait_blocks_the_kernel(
    tmp_path: Path, kernel_python: str | None
) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path, python=kernel_python) as k:
        k.run("%load_ext nbagent")
        k.run(REMOVE_SETUP)
        shown = k.run_all(["%agent show"])
        (inbox_comm,) = [
            m.content["comm_id"]
            for m in shown.iopub
            if m.type == "comm_open" and "queues" in m.content["data"].get("state", {})
        ]
        k.run("%followup start")  # turn 1 runs `hold`
        k.run("%followup later question")  # parked in next-turn, shown in the inbox widget
        wait_for_events(db, "tool/call")
        waiting = k.send("print('waiting', flush=True)\n%agent wait")
        # once the cell prints, it holds the main thread: a click sent now waits in the kernel's socket
        # until the wait reads it (one that reached the kernel just before would be handled after)
        k.wait_for_stream(waiting, "waiting")
        (parked,) = [
            m["id"]
            for e in read_events(db)
            if e.type == "agent/inbox/spliced"
            for m in e.data["inserted"]
            if m["content"][0]["text"] == "later question"
        ]
        # what the remove button sends, while the kernel's main thread blocks in `%agent wait`
        click = k.kc.session.msg(
            "comm_msg",
            {
                "comm_id": inbox_comm,
                "data": {"method": "custom", "content": {"type": "remove", "id": parked}},
            },
        )
        k.kc.shell_channel.send(click)
        reply = k.kc.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == waiting and reply["content"]["status"] == "ok"
        k.wait_idle(waiting)
        assert "status: idle" in k.run("%agent status")
    events = read_events(db)
    check_invariants(events)
    results = [
        e.data["message"]["content"][0]["content"][0]["text"] for e in events if e.type == "tool/result"
    ]
    assert results == ["a pending message was removed"]
    removals = [
        e.data for e in events if e.type == "agent/inbox/spliced" and e.data.get("outcome") == "canceled"
    ]
    assert [(d["target"], d["removed_count"], d["inserted"]) for d in removals] == [("next-turn", 1, [])]


MAIN_THREAD_SETUP = """
import threading, nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent, current_kernel_session

main = current_kernel_session().main_thread
secret = 41

@nbagent.tool
async def peek(name: str) -> str:
    \"\"\"Read a variable of the user's namespace on the kernel's main thread.\"\"\"
    return await main.call(
        lambda: f"{name} + 1 = {get_ipython().user_ns[name] + 1} on {threading.current_thread().name}"
    )

agent = current_agent()
agent.add_tool(peek)
call = Response(tool_calls=[ToolCall("peek", {"name": "secret"})])
agent.set_model(ScriptedModel([call, "done", call, "done"]))
"""


@pytest.mark.parametrize("kernel_python", KERNELS)
def test_main_thread_work_is_served_while_a_wait_blocks_and_when_the_kernel_is_idle(
    tmp_path: Path, kernel_python: str | None
) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path, python=kernel_python) as k:
        k.run("%load_ext nbagent")
        k.run(MAIN_THREAD_SETUP)
        assert "turn 1: completed" in k.run("%followup --wait during a wait")
        k.run("%followup while idle")
        wait_for_events(db, "turn/end", count=2)
    results = [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in read_events(db)
        if e.type == "tool/result"
    ]
    assert results == ["secret + 1 = 42 on MainThread"] * 2


BLOCKING_TOOL = """
import threading, nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent, current_kernel_session

release = threading.Event()

@nbagent.tool
def hog() -> str:
    \"\"\"A synchronous body: it holds the agent loop until released.\"\"\"
    release.wait(60)
    return "released"

agent = current_agent()
agent.add_tool(hog)
agent.set_model(ScriptedModel([Response(tool_calls=[ToolCall("hog", {})]), "done"]))
current_kernel_session().delivery_patience = 0.2
"""


def test_a_steer_is_recorded_at_once_even_while_a_synchronous_tool_holds_the_agent_loop(
    tmp_path: Path,
) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(BLOCKING_TOOL)
        k.run("%followup go")
        wait_for_events(db, "tool/call")
        out = k.run("%steer while you hog the loop")  # returns after the patience, not after the tool
        assert "steer «while you hog the loop» · inbox · queued" in out
        steered = [
            m["content"][0]["text"]
            for e in read_events(db)
            if e.type == "agent/inbox/spliced"
            for m in e.data["inserted"]
        ]
        assert steered[-1] == "while you hog the loop"
        k.run("release.set()")
        k.run("%agent wait")
    events = read_events(db)
    check_invariants(events)
    texts = [e.data["content"][0]["text"] for e in events if e.type == "user/message"]
    assert texts == ["go", "while you hog the loop"]  # claimed by turn 1's next step


def test_followup_returns_while_the_turn_runs_and_a_dead_kernel_is_repaired_on_resume(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(SLOW_TOOL)
        started = time.perf_counter()
        out = k.run("%followup ship it")
        assert time.perf_counter() - started < 5
        assert "followup «ship it» · turn 1 · running" in out
        wait_for_events(tmp_path / "work.nbagent.sqlite", "tool/call")
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


def test_shutting_the_kernel_down_closes_the_session_and_its_running_turn(tmp_path: Path) -> None:
    db = tmp_path / "work.nbagent.sqlite"
    k = Kernel(tmp_path)
    k.run("%load_ext nbagent")
    k.run(SLOW_MODEL.format(n=1))
    k.run("%followup take your time")
    wait_for_events(db, "step/start")
    k.kc.stop_channels()
    k.km.shutdown_kernel(now=False)  # Kernel → Shut Down: a shutdown request, then the process exits
    events = read_events(db)
    check_invariants(events)
    assert events[-1].data == {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "closed"}}}


def test_shutting_the_kernel_down_closes_a_database_sessions_running_turn(
    tmp_path: Path, pg_url: str
) -> None:
    """The store's pools (opened after the kernel's own exit handler was registered) close at exit
    only after the agent has closed: its turn's end is written to the database."""
    k = Kernel(tmp_path)
    k.run(f"%load_ext nbagent\n%agent --db {pg_url}")
    k.run(SLOW_MODEL.format(n=1))
    k.run("%followup take your time")
    deadline = time.monotonic() + 120
    while not any(e.type == "step/start" for e in _pg_events(pg_url)):
        assert time.monotonic() < deadline, "the turn did not start"
        time.sleep(0.02)
    k.kc.stop_channels()
    k.km.shutdown_kernel(now=False)
    events = _pg_events(pg_url)
    check_invariants(events)
    assert events[-1].data == {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "closed"}}}


def _pg_events(url: str) -> list:
    import nbagent

    rows = nbagent.list_sessions(url)
    return list(nbagent.read_events(url, rows[0].id)) if rows else []


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
        out = k.run("%%followup --wait\nfirst line\n  second line?\n")
        assert "followup «first line» · turn 1 · done" in out
        assert "first answer, streamed slowly" in out and "turn 1: completed" in out
        assert "status: idle" in k.run("%agent status")
        out = k.run("%%steer --wait\nthird\nfourth\n")
        assert "steer «third» · turn 2 · done" in out and "turn 2: completed" in out
    events = read_events(tmp_path / "work.nbagent.sqlite")
    check_invariants(events)
    texts = [e.data["content"][0]["text"] for e in events if e.type == "user/message"]
    assert texts == ["first line\n  second line?", "third\nfourth"]
