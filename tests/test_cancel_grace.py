"""A tool or model that ignores cancellation cannot hang ``cancel()``, ``when_idle()`` or
``close()``: after ``cancel_grace`` seconds it is abandoned (SPEC §5.6)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from eventtrace import trace, without_headers

import nbagent
from nbagent.models import Finish, Response, ScriptedModel, TextDelta, ToolCall
from nbagent.testing import check_invariants


def stubborn_tool(started: asyncio.Event, release: asyncio.Event) -> nbagent.Tool:
    @nbagent.tool
    async def stubborn() -> str:
        """Ignores its signal and swallows every cancellation until released."""
        started.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # swallowed
        return "finished late"

    return stubborn


async def test_a_tool_that_swallows_cancellation_is_abandoned_after_the_grace(db):
    started, release = asyncio.Event(), asyncio.Event()
    model = ScriptedModel([Response(tool_calls=[ToolCall("stubborn", {}, id="c1")]), Response("after")])
    agent = nbagent.open_session(db, model=model, tools=[stubborn_tool(started, release)], cancel_grace=0.2)
    assert agent.cancel_grace == 0.2
    agent.followup("go")
    await started.wait()
    agent.cancel()
    await asyncio.wait_for(agent.when_idle(), 30)
    lines = without_headers(trace(agent.events))
    assert lines[-4:] == ["TC c1", "TR c1 ABORTED", "SE 1.1", "TE 1 aborted:user"]
    (result,) = [e for e in agent.events if e.type == "tool/result"]
    assert "abandoned" in result.data["message"]["content"][0]["content"][0]["text"]
    count = len(agent.events)
    release.set()  # it finishes now: whatever it returns is ignored
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(agent.events) == count
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_close_with_a_stubborn_tool_finishes_and_frees_the_lease(db):
    started, release = asyncio.Event(), asyncio.Event()
    model = ScriptedModel([Response(tool_calls=[ToolCall("stubborn", {}, id="c1")])])
    agent = nbagent.open_session(db, model=model, tools=[stubborn_tool(started, release)], cancel_grace=0.2)
    agent.followup("go")
    await started.wait()
    await asyncio.wait_for(agent.close(), 30)
    assert agent.status == "closed"
    code = f"import asyncio, nbagent\nasync def main():\n    a = nbagent.resume_session({str(db)!r})\n    await a.close()\nasyncio.run(main())"
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert without_headers(trace(nbagent.read_events(db, agent.session_id)))[-2:] == [
        "SE 1.1",
        "TE 1 aborted:closed",
    ]
    release.set()


class StubbornStream:
    """Streams a prefix, then ignores its signal and swallows cancellation until released."""

    name = "stubborn-stream"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def stream(self, request, signal):
        yield TextDelta("partial")
        self.started.set()
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                continue
        yield Finish("stop")


async def test_a_model_stream_that_swallows_cancellation_is_abandoned_after_the_grace(db):
    model = StubbornStream()
    agent = nbagent.open_session(db, model=model, cancel_grace=0.2)
    agent.followup("go")
    await model.started.wait()
    agent.cancel()
    await asyncio.wait_for(agent.when_idle(), 30)
    assert without_headers(trace(agent.events))[-3:] == ["AM* 1.1 'partial'", "SE 1.1", "TE 1 aborted:user"]
    model.release.set()
    await agent.close()


async def test_a_tool_that_settles_within_the_grace_keeps_its_result_and_contexts(db):
    gate, started = asyncio.Event(), asyncio.Event()

    @nbagent.tool
    async def slow_but_fair(signal) -> nbagent.ToolResult:
        """Finishes its work shortly after a cancel."""
        started.set()
        await signal.wait()
        await gate.wait()
        return nbagent.ToolResult(
            "done", additional_contexts=[nbagent.UserMessage.text("late context", {"kind": "tool"})]
        )

    model = ScriptedModel([Response(tool_calls=[ToolCall("slow_but_fair", {}, id="c1")])])
    agent = nbagent.open_session(db, model=model, tools=[slow_but_fair], cancel_grace=30)
    agent.followup("go")
    await started.wait()
    agent.cancel()
    gate.set()
    await agent.when_idle()
    lines = without_headers(trace(agent.events))
    assert lines[-4:] == ["TR c1 ABORTED", "INS ns 0 ['late context']", "SE 1.1", "TE 1 aborted:user"]
    assert [m.plain_text for m in agent.inbox.next_step] == ["late context"]
    await agent.close()


def test_cancel_grace_must_be_a_number_of_seconds(db):
    async def main() -> None:
        with pytest.raises(ValueError, match="cancel_grace"):
            nbagent.open_session(db, cancel_grace=-1)

    asyncio.run(main())
