"""Cancellation, the wake latch, close, and reentrancy (SPEC §3.3, §3.5, §5.6)."""

from __future__ import annotations

import asyncio

import pytest
from eventtrace import trace

import nbagent
from nbagent import ReentrantDeliveryError, SessionClosedError, ToolResult, UserMessage
from nbagent.models import Finish, Response, ScriptedModel, TextDelta, ToolCall
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


class Stalling:
    """Streams ``prefix`` then waits until cancelled (like a slow provider)."""

    name = "stalling"

    def __init__(self, prefix: str = "Hel") -> None:
        self.prefix = prefix
        self.started = asyncio.Event()
        self.closed = False

    async def stream(self, request, signal):
        try:
            if self.prefix:
                yield TextDelta(self.prefix)
            self.started.set()
            await asyncio.Event().wait()
            yield Finish("stop")
        finally:
            self.closed = True


def cell(text: str) -> UserMessage:
    return UserMessage.text(text, source={"kind": "cell"})


async def test_cancel_while_idle_clears_the_inbox_next_step_first(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    agent.inject(cell("c"))
    agent.inbox.append("next-turn", UserMessage.text("parked"))
    discarded = []
    agent.on("inbox/discarded", lambda n: discarded.append(n.message.plain_text))
    agent.cancel(keep_inbox=True)
    assert len(agent.events) == 2
    agent.cancel()
    assert trace(agent.events)[2:] == ["CAN ns 0 1", "CAN nt 0 1"]
    assert discarded == ["c", "parked"] and agent.status == "idle"
    agent.cancel()
    assert len(agent.events) == 4
    await agent.close()


async def test_cancel_from_a_status_callback_opens_no_turn(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    off = agent.on("status", lambda n: n.status == "running" and agent.cancel(keep_inbox=True))
    agent.followup("kept")
    assert trace(agent.events) == ["INS nt 0 ['kept']"]
    assert agent.status == "idle" and [m.plain_text for m in agent.inbox.next_turn] == ["kept"]
    off()
    agent.on("status", lambda n: n.status == "running" and agent.cancel())
    agent.followup("dropped")
    assert trace(agent.events)[1:] == ["INS nt 1 ['dropped']", "CAN nt 0 2"]
    assert not agent.inbox.has_pending
    await agent.close()


@pytest.mark.parametrize("keep_inbox", [False, True])
async def test_cancel_mid_stream_keeps_the_visible_prefix_and_aborts(db, keep_inbox):
    model = Stalling()
    agent = nbagent.open_session(db, model=model)
    agent.followup("q")
    await model.started.wait()
    agent.inject(cell("pending ctx"))
    agent.cancel(keep_inbox=keep_inbox)
    await agent.when_idle()
    lines = trace(agent.events)
    tail = ["AM* 1.1 'Hel'", "SE 1.1", "TE 1 aborted:user"]
    if keep_inbox:
        assert lines[-5:] == ["CH", "INS ns 0 ['pending ctx']", *tail]
        assert [m.plain_text for m in agent.inbox.next_step] == ["pending ctx"]
    else:
        assert lines[-6:] == ["CH", "INS ns 0 ['pending ctx']", "CAN ns 0 1", *tail]
        assert not agent.inbox.has_pending
    assert model.closed
    am = next(e.data for e in agent.events if e.type == "assistant/message")
    assert am["interrupted"] is True and am["message"]["content"] == [{"type": "text", "text": "Hel"}]
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_cancel_before_any_visible_text_writes_no_assistant_message(db):
    model = Stalling(prefix="")
    agent = nbagent.open_session(db, model=model)
    agent.followup("q")
    await model.started.wait()
    agent.cancel()
    await agent.when_idle()
    assert trace(agent.events)[-3:] == ["RH initial", "SE 1.1", "TE 1 aborted:user"]
    await agent.close()


async def test_the_interrupted_prefix_is_what_the_next_request_sees(db):
    stalling = Stalling()
    agent = nbagent.open_session(db, model=stalling)
    agent.followup("q")
    await stalling.started.wait()
    agent.cancel()
    await agent.when_idle()
    after = ScriptedModel(["ok"])
    agent.set_model(after)
    await agent.run("again")
    assert [(m.role, m.plain_text) for m in after.requests[0].messages] == [
        ("user", "q"),
        ("assistant", "Hel"),
        ("user", "again"),
    ]
    check_invariants(agent.events, requests=after.requests)
    await agent.close()


async def test_cancel_mid_tools_awaits_started_calls_and_balances_unstarted_ones(db):
    started = asyncio.Event()
    release = asyncio.Event()

    @nbagent.tool
    async def slow(signal) -> ToolResult:
        started.set()
        await release.wait()
        return ToolResult("finished anyway", additional_contexts=[cell("late ctx")])

    @nbagent.tool
    def fast() -> str:
        raise AssertionError("must not start after the cancel")

    calls = [ToolCall("slow", id="c1"), ToolCall("fast", id="c2")]
    agent = nbagent.open_session(db, model=ScriptedModel([Response(tool_calls=calls)]), tools=[slow, fast])
    agent.followup("go")
    await started.wait()
    agent.inject(cell("before cancel"))
    agent.cancel()
    release.set()
    await agent.when_idle()
    lines = trace(agent.events)
    assert lines[lines.index("TC c1") :] == [
        "TC c1",
        "INS ns 0 ['before cancel']",
        "CAN ns 0 1",
        "TR c1 ABORTED",
        "INS ns 0 ['late ctx']",
        "TC c2",
        "TR c2 ABORTED_BEFORE_DISPATCH",
        "SE 1.1",
        "TE 1 aborted:user",
    ]
    assert [m.plain_text for m in agent.inbox.next_step] == ["late ctx"]
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_a_waking_call_during_cancel_convergence_is_latched_to_the_next_turn(db):
    stalling = Stalling()
    agent = nbagent.open_session(db, model=stalling)
    statuses = []
    agent.on("status", lambda n: statuses.append(n.status))
    agent.followup("first")
    await stalling.started.wait()
    agent.cancel(keep_inbox=True)
    agent.steer("after cancel")
    agent.set_model(ScriptedModel(["replayed"]))
    await agent.when_idle()
    lines = trace(agent.events)
    i = lines.index("TE 1 aborted:user")
    assert "INS nt 0 ['after cancel']" in lines[:i]
    assert lines[i + 1 : i + 4] == ["TS 2", "CLM nt 1", "SS 2.1"]
    assert lines[-1] == "TE 2 completed"
    assert statuses == ["running", "idle", "running", "idle"]
    await agent.close()


async def test_cancel_without_keep_inbox_drops_a_latched_wake(db):
    stalling = Stalling()
    agent = nbagent.open_session(db, model=stalling)
    agent.followup("first")
    await stalling.started.wait()
    agent.cancel(keep_inbox=True)
    agent.followup("latched")
    agent.cancel()
    await agent.when_idle()
    lines = trace(agent.events)
    assert lines[-1] == "TE 1 aborted:user" and "CAN nt 0 1" in lines
    await agent.close()


async def test_close_with_pending_work_keeps_it_for_resume(db):
    stalling = Stalling()
    agent = nbagent.open_session(db, model=stalling)
    agent.followup("running")
    await stalling.started.wait()
    agent.inject(cell("pending ctx"))
    agent.followup("pending prompt")
    await agent.close()
    assert agent.status == "closed"
    assert trace(agent.events)[-1] == "TE 1 aborted:closed"
    with pytest.raises(SessionClosedError):
        agent.inject("x")
    with pytest.raises(SessionClosedError):
        agent.inbox.clear()
    await agent.close()
    model = ScriptedModel(["resumed answer"])
    again = nbagent.resume_session(db, model=model)
    assert [m.plain_text for m in again.inbox.next_step] == ["pending ctx"]
    assert [m.plain_text for m in again.inbox.next_turn] == ["pending prompt"]
    r = await again.run("new prompt")
    assert r.turns == (2, 3)
    assert [m.plain_text for m in model.requests[0].messages][-2:] == ["pending ctx", "pending prompt"]
    check_invariants(again.events, inbox=again.inbox)
    await again.close()


async def test_close_from_inside_a_turn_raises(db):
    box = []
    errors = []

    @nbagent.tool
    async def closer() -> str:
        try:
            await box[0].close()
        except RuntimeError as exc:
            errors.append(str(exc))
        return "ok"

    agent = nbagent.open_session(
        db, model=ScriptedModel([Response(tool_calls=[ToolCall("closer")]), "x"]), tools=[closer]
    )
    box.append(agent)
    await agent.run("go")
    assert errors and "cancel" in errors[0]
    await agent.close()


async def test_reentrant_delivery_from_an_event_callback_raises_and_records_nothing(db):
    model = ScriptedModel(["x", "y"])
    agent = nbagent.open_session(db, model=model)
    failures = []

    def on_event(notice):
        if notice.event.type == "turn/start":
            try:
                agent.inject("reentrant")
            except ReentrantDeliveryError as exc:
                failures.append(exc)
            asyncio.get_running_loop().call_soon(agent.inject, cell("deferred"))

    agent.on("event", on_event)
    await agent.run("go")
    assert len(failures) == 1
    lines = trace(agent.events)
    assert "INS ns 0 ['reentrant']" not in lines
    assert lines[:4] == ["INS nt 0 ['go']", "TS 1", "CLM nt 1", "INS ns 0 ['deferred']"]
    assert "UM deferred" in lines and lines[-1] == "TE 1 completed"
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_cancel_inside_an_event_callback_clears_after_the_round(db):
    box: list[nbagent.Agent] = []

    class InjectsThenStalls(Stalling):
        async def stream(self, request, signal):
            box[0].inject(cell("queued during stream"))
            async for chunk in super().stream(request, signal):
                yield chunk

    agent = nbagent.open_session(db, model=InjectsThenStalls())
    box.append(agent)

    def on_event(notice):
        if notice.event.type == "assistant/chunk":
            agent.cancel()

    agent.on("event", on_event)
    agent.steer("go")
    await agent.when_idle()
    assert trace(agent.events)[-6:] == [
        "INS ns 0 ['queued during stream']",
        "CH",
        "CAN ns 0 1",
        "AM* 1.1 'Hel'",
        "SE 1.1",
        "TE 1 aborted:user",
    ]
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()
