"""Deliveries and turn order: the exact durable sequences of SPEC §3.2, §5.1–§5.3, §5.7."""

from __future__ import annotations

import asyncio

import pytest
from eventtrace import trace

import nbagent
from nbagent import UserMessage
from nbagent.models import EchoModel, Response, ScriptedModel
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


def ctx(text: str, kind: str = "cell") -> UserMessage:
    return UserMessage.text(text, source={"kind": kind})


async def test_idle_inject_appends_one_splice_and_nothing_else(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    statuses = []
    agent.on("status", lambda n: statuses.append(n.status))
    m = agent.inject(ctx("df summary"))
    assert isinstance(m, UserMessage)
    await asyncio.sleep(0.01)
    assert trace(agent.events) == ["INS ns 0 ['df summary']"]
    assert agent.status == "idle" and statuses == []
    assert agent.inbox.next_step == (m,)
    assert agent.model.requests == []
    await agent.close()


async def test_idle_inject_then_followup_claims_context_before_prompt(db):
    model = ScriptedModel(["answer"])
    agent = nbagent.open_session(db, model=model)
    agent.inject(ctx("context"))
    agent.followup("prompt")
    await agent.when_idle()
    assert trace(agent.events) == [
        "INS ns 0 ['context']",
        "INS nt 0 ['prompt']",
        "TS 1",
        "CLM ns 1",
        "CLM nt 1",
        "SS 1.1",
        "UM context",
        "UM prompt",
        "RH initial",
        "CH",
        "AM 1.1 'answer'",
        "SE 1.1",
        "TE 1 completed",
    ]
    assert [m.plain_text for m in model.requests[0].messages] == ["context", "prompt"]
    assert [m.kind for m in model.requests[0].messages] == ["cell", "user"]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_idle_waking_call_opens_the_turn_and_claims_before_returning(db):
    agent = nbagent.open_session(db, model=ScriptedModel(["a"]))
    agent.followup("p")
    assert agent.status == "running"
    assert trace(agent.events) == ["INS nt 0 ['p']", "TS 1", "CLM nt 1"]
    assert agent.inbox.next_turn == ()
    await agent.when_idle()
    assert agent.status == "idle"
    await agent.close()


async def test_steer_while_idle_starts_a_turn_with_the_steering(db):
    agent = nbagent.open_session(db, model=ScriptedModel(["ok"]))
    agent.steer("go")
    assert trace(agent.events) == ["INS ns 0 ['go']", "TS 1", "CLM ns 1"]
    await agent.when_idle()
    assert trace(agent.events)[3:] == [
        "SS 1.1",
        "UM go",
        "RH initial",
        "CH",
        "AM 1.1 'ok'",
        "SE 1.1",
        "TE 1 completed",
    ]
    await agent.close()


async def test_steer_while_running_enters_the_next_step_of_the_same_turn(db):
    gate = asyncio.Event()
    agent_box: list[nbagent.Agent] = []

    async def first(request):
        agent_box[0].steer("also this")
        await gate.wait()
        return Response("first answer")

    model = ScriptedModel([first, "second answer"])
    agent = nbagent.open_session(db, model=model)
    agent_box.append(agent)
    agent.followup("start")
    await asyncio.sleep(0.01)
    gate.set()
    await agent.when_idle()
    assert trace(agent.events) == [
        "INS nt 0 ['start']",
        "TS 1",
        "CLM nt 1",
        "SS 1.1",
        "UM start",
        "RH initial",
        "INS ns 0 ['also this']",
        "CH",
        "AM 1.1 'first answer'",
        "SE 1.1",
        "CLM ns 1",
        "SS 1.2",
        "UM also this",
        "CH",
        "AM 1.2 'second answer'",
        "SE 1.2",
        "TE 1 completed",
    ]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_two_followups_in_one_tick_are_two_turns_in_one_running_interval(db):
    model = ScriptedModel(["A", "B"])
    agent = nbagent.open_session(db, model=model)
    statuses = []
    agent.on("status", lambda n: statuses.append(n.status))
    agent.followup("a")
    agent.followup("b")
    await agent.when_idle()
    assert trace(agent.events) == [
        "INS nt 0 ['a']",
        "TS 1",
        "CLM nt 1",
        "INS nt 0 ['b']",
        "SS 1.1",
        "UM a",
        "RH initial",
        "CH",
        "AM 1.1 'A'",
        "SE 1.1",
        "TE 1 completed",
        "TS 2",
        "CLM nt 1",
        "SS 2.1",
        "UM b",
        "CH",
        "AM 2.1 'B'",
        "SE 2.1",
        "TE 2 completed",
    ]
    assert statuses == ["running", "idle"]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_followup_while_running_waits_for_its_own_turn(db):
    agent_box: list[nbagent.Agent] = []

    def first(request):
        agent_box[0].followup("later")
        return Response("one")

    model = ScriptedModel([first, "two"])
    agent = nbagent.open_session(db, model=model)
    agent_box.append(agent)
    agent.followup("now")
    await agent.when_idle()
    lines = trace(agent.events)
    assert lines[lines.index("TE 1 completed") :] == [
        "TE 1 completed",
        "TS 2",
        "CLM nt 1",
        "SS 2.1",
        "UM later",
        "CH",
        "AM 2.1 'two'",
        "SE 2.1",
        "TE 2 completed",
    ]
    assert "INS nt 0 ['later']" in lines[: lines.index("TE 1 completed")]
    await agent.close()


async def test_inject_while_the_final_answer_streams_adds_one_more_model_call(db):
    agent_box: list[nbagent.Agent] = []

    def answer(request):
        agent_box[0].inject(ctx("late context"))
        return Response("final")

    model = ScriptedModel([answer, "after context"])
    agent = nbagent.open_session(db, model=model)
    agent_box.append(agent)
    agent.followup("q")
    await agent.when_idle()
    lines = trace(agent.events)
    assert lines[-9:] == [
        "AM 1.1 'final'",
        "SE 1.1",
        "CLM ns 1",
        "SS 1.2",
        "UM late context",
        "CH",
        "AM 1.2 'after context'",
        "SE 1.2",
        "TE 1 completed",
    ]
    assert len(model.requests) == 2
    await agent.close()


async def test_inject_after_the_claim_waits_for_the_next_boundary(db):
    model = ScriptedModel(["first", "second"])
    agent = nbagent.open_session(db, model=model)

    async def hold(step, next):
        if step.step == 1:
            step.agent.inject(ctx("too late"))
        return await next()

    agent.hooks.pre_step.add(hold)
    agent.followup("p")
    await agent.when_idle()
    assert trace(agent.events) == [
        "INS nt 0 ['p']",
        "TS 1",
        "CLM nt 1",
        "INS ns 0 ['too late']",
        "SS 1.1",
        "UM p",
        "RH initial",
        "CH",
        "AM 1.1 'first'",
        "SE 1.1",
        "CLM ns 1",
        "SS 1.2",
        "UM too late",
        "CH",
        "AM 1.2 'second'",
        "SE 1.2",
        "TE 1 completed",
    ]
    assert [m.plain_text for m in model.requests[0].messages] == ["p"]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_delivery_returns_a_detached_frozen_copy(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    payload = {"type": "text", "text": "v1", "extra": [1]}
    m = agent.inject(UserMessage(content=[payload], source={"kind": "plugin", "plugin": "t"}))
    payload["text"] = "v2"
    payload["extra"].append(2)
    assert m.content[0]["text"] == "v1"
    assert agent.events[-1].data["inserted"][0]["content"][0] == {
        "type": "text",
        "text": "v1",
        "extra": [1],
    }
    await agent.close()


@pytest.mark.parametrize("bad", [float("nan"), {"k": object()}, {1: "x"}])
async def test_non_json_input_is_refused_with_nothing_recorded(db, bad):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    with pytest.raises(TypeError):
        agent.followup(UserMessage(content=[{"type": "text", "text": "x", "bad": bad}]))
    assert agent.events == ()
    assert agent.status == "idle"
    assert not agent.inbox.has_pending
    await agent.close()
    assert nbagent.list_sessions(db)[0].events == 0


async def test_a_string_becomes_a_user_sourced_text_message(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    m = agent.inject("plain")
    assert m.source == {"kind": "user"} and m.plain_text == "plain"
    with pytest.raises(TypeError):
        agent.inject(42)  # type: ignore[arg-type]
    await agent.close()


async def test_echo_model_reports_each_message_with_role_source_and_first_line(db):
    agent = nbagent.open_session(db)
    assert isinstance(agent.model, EchoModel)
    agent.inject(ctx("<dataframe name='df'>\nrows", kind="dataframe"))
    r = await agent.run("What is the mean?")
    assert r.text == (
        "echo: I received 2 messages.\n"
        "1. user · dataframe · <dataframe name='df'>\n"
        "2. user · user · What is the mean?"
    )
    assert r.turns == (1,) and r.end == {"turn": 1, "reason": {"kind": "completed"}}
    await agent.close()


async def test_deliveries_from_other_threads_commit_there_and_wake_on_the_loop(db):
    model = ScriptedModel(["done"])
    agent = nbagent.open_session(db, model=model)
    loop_events = []
    import threading

    agent.on("inbox/inserted", lambda n: loop_events.append(threading.get_ident()))
    results = []

    def worker(i):
        results.append(agent.inject(ctx(f"t{i}")))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(agent.inbox.next_step) == 8
    assert agent.status == "idle"
    t = threading.Thread(target=lambda: agent.followup("from a thread"))
    t.start()
    t.join()
    await asyncio.sleep(0.05)
    await agent.when_idle()
    assert len(model.requests) == 1 and len(model.requests[0].messages) == 9
    assert set(loop_events) == {threading.get_ident()}
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()
