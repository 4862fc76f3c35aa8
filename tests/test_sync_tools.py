"""Sync tool bodies run in a worker thread, never on the agent's loop (SPEC §9.7): a blocked sync
tool stalls neither deliveries, notices, ``cancel()``→``when_idle()`` nor ``close()``, and after
the cancel grace it is abandoned like an async tool (SPEC §5.6)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from eventtrace import trace, without_headers

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores

SAFETY_NET_S = 120
"""Without the fix the blocked tool holds the loop: this releases it so the test fails, not hangs."""


class Blocker:
    """A sync tool that blocks its thread on an event the test controls (as ``time.sleep`` or a C
    call would), and remembers the thread it ran on."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.thread: threading.Thread | None = None
        self.net = threading.Timer(SAFETY_NET_S, self.release.set)
        self.net.daemon = True
        self.net.start()

    def tool(self) -> nbagent.Tool:
        @nbagent.tool
        def blocking() -> str:
            """Blocks until the test releases it."""
            self.thread = threading.current_thread()
            self.started.set()
            self.release.wait()
            return "finished late"

        return blocking

    async def wait_started(self) -> None:
        await asyncio.wait_for(asyncio.to_thread(self.started.wait), SAFETY_NET_S * 2)

    def finish(self) -> None:
        self.release.set()
        self.net.cancel()


async def test_a_blocked_sync_tool_stalls_neither_deliveries_notices_nor_cancel(db):
    blocker = Blocker()
    model = ScriptedModel([Response(tool_calls=[ToolCall("blocking", {}, id="c1")]), Response("after")])
    agent = nbagent.open_session(db, model=model, tools=[blocker.tool()], cancel_grace=0.5)
    inserted = asyncio.Event()
    agent.on("inbox/inserted", lambda notice: inserted.set())
    try:
        agent.followup("go")
        await blocker.wait_started()
        assert blocker.thread is not threading.current_thread()  # not the agent's loop thread
        agent.inject("context while the tool blocks")
        await asyncio.wait_for(inserted.wait(), 60)  # the notice arrives while the tool blocks
        assert not blocker.release.is_set()
        agent.cancel()
        await asyncio.wait_for(agent.when_idle(), 60)
        assert not blocker.release.is_set()  # idle while the tool still blocks: it was abandoned
        lines = without_headers(trace(agent.events))
        assert lines[-6:] == [
            "TC c1",
            "INS ns 0 ['context while the tool blocks']",
            "TR c1 ABORTED",
            "SE 1.1",
            "CAN ns 0 1",
            "TE 1 aborted:user",
        ] or lines[-6:] == [
            "TC c1",
            "INS ns 0 ['context while the tool blocks']",
            "CAN ns 0 1",
            "TR c1 ABORTED",
            "SE 1.1",
            "TE 1 aborted:user",
        ], lines
        (result,) = [e for e in agent.events if e.type == "tool/result"]
        assert "abandoned" in result.data["message"]["content"][0]["content"][0]["text"]
        count = len(agent.events)
        blocker.finish()  # it returns now: whatever it returns is ignored
        await asyncio.to_thread(blocker.thread.join, 60)
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(agent.events) == count
        check_invariants(agent.events, inbox=agent.inbox)
        await asyncio.wait_for(agent.close(), 60)
    finally:
        blocker.finish()


async def test_close_finishes_while_a_sync_tool_blocks_and_frees_the_session(db):
    blocker = Blocker()
    model = ScriptedModel([Response(tool_calls=[ToolCall("blocking", {}, id="c1")])])
    agent = nbagent.open_session(db, model=model, tools=[blocker.tool()], cancel_grace=0.5)
    try:
        agent.followup("go")
        await blocker.wait_started()
        await asyncio.wait_for(agent.close(), 60)
        assert agent.status == "closed" and not blocker.release.is_set()
        assert without_headers(trace(agent.events))[-3:] == ["TR c1 ABORTED", "SE 1.1", "TE 1 aborted:closed"]
        again = nbagent.resume_session(db, agent.session_id)  # the lease is free
        check_invariants(again.events, inbox=again.inbox)
        await again.close()
    finally:
        blocker.finish()


async def test_a_sync_tool_runs_in_a_worker_thread_and_its_value_is_the_result(db):
    seen: list[threading.Thread] = []

    @nbagent.tool
    def where() -> str:
        """Says which thread it ran on."""
        seen.append(threading.current_thread())
        return "worked"

    model = ScriptedModel([Response(tool_calls=[ToolCall("where", {}, id="c1")]), Response("done")])
    agent = nbagent.open_session(db, model=model, tools=[where])
    run = await agent.run("go")
    assert run.text == "done" and seen and seen[0] is not threading.current_thread()
    (result,) = [e for e in agent.events if e.type == "tool/result"]
    assert result.data["message"]["content"][0]["content"] == [{"type": "text", "text": "worked"}]
    await agent.close()
