"""Extension points: pre-step waterfall, reject, raising listeners, turn_stopping, request_error."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from eventtrace import trace

import nbagent
from nbagent import Enter, Reject, Retry, UserMessage
from nbagent.core.retry import RetryPolicy
from nbagent.models import Failure, Response, ScriptedModel
from nbagent.testing import check_invariants

FAST = RetryPolicy(base_delay_ms=1)

pytestmark = pytest.mark.stores


async def test_pre_step_additions_follow_waterfall_return_order(db):
    model = ScriptedModel(["ok"])
    agent = nbagent.open_session(db, model=model)

    async def outer(step, next):
        down = await next()
        return Enter(
            [*down.messages, UserMessage.text("outer-add", source={"kind": "plugin", "plugin": "o"})]
        )

    async def inner(step, next):
        down = await next()
        return Enter(
            [UserMessage.text("inner-first", source={"kind": "plugin", "plugin": "i"}), *down.messages]
        )

    async def outermost(step, next):
        return await next()

    agent.hooks.pre_step.add(outer)
    agent.hooks.pre_step.add(inner)
    agent.hooks.pre_step.add(outermost, prepend=True)
    agent.followup("prompt")
    await agent.when_idle()
    assert [x for x in trace(agent.events) if x.startswith("UM")] == [
        "UM inner-first",
        "UM prompt",
        "UM outer-add",
    ]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_a_pre_step_rewrite_keeps_the_message_id(db):
    agent = nbagent.open_session(db, model=ScriptedModel(["ok"]))

    async def upper(step, next):
        down = await next()
        return Enter(
            [
                m.model_copy(update={"content": ({"type": "text", "text": m.plain_text.upper()},)})
                for m in down.messages
            ]
        )

    agent.hooks.pre_step.add(upper)
    sent = agent.followup("shout")
    await agent.when_idle()
    um = next(e.data for e in agent.events if e.type == "user/message")
    assert um["id"] == sent.id and um["content"][0]["text"] == "SHOUT"
    await agent.close()


async def test_reject_closes_the_turn_blocked_and_drops_the_claimed_batch(db):
    model = ScriptedModel([])
    agent = nbagent.open_session(db, model=model)

    async def block(step, next):
        return Reject()

    remove = agent.hooks.pre_step.add(block)
    agent.inject(UserMessage.text("ctx", source={"kind": "cell"}))
    r = await agent.run("blocked prompt")
    assert trace(agent.events) == [
        "INS ns 0 ['ctx']",
        "INS nt 0 ['blocked prompt']",
        "TS 1",
        "CLM ns 1",
        "CLM nt 1",
        "TE 1 blocked",
    ]
    assert r.end == {"turn": 1, "reason": {"kind": "blocked"}} and r.text is None
    assert not agent.inbox.has_pending and model.requests == []
    remove()
    await agent.close()


async def test_a_raising_listener_errors_the_turn_and_later_input_waits_for_a_wake(db):
    model = ScriptedModel(["after"])
    agent = nbagent.open_session(db, model=model)
    errors = []
    agent.on("error", lambda n: errors.append(n.error))

    async def boom(step, next):
        step.agent.inject(UserMessage.text("after-claim", source={"kind": "cell"}))
        step.agent.followup("queued")
        raise RuntimeError("listener broke")

    remove = agent.hooks.pre_step.add(boom)
    agent.followup("first")
    await agent.when_idle()
    assert trace(agent.events) == [
        "INS nt 0 ['first']",
        "TS 1",
        "CLM nt 1",
        "INS ns 0 ['after-claim']",
        "INS nt 0 ['queued']",
        "TE 1 error:UNKNOWN",
    ]
    assert errors and "listener broke" in errors[0].message
    assert agent.status == "idle"
    assert [m.plain_text for m in agent.inbox.next_step] == ["after-claim"]
    assert [m.plain_text for m in agent.inbox.next_turn] == ["queued"]
    remove()
    agent.steer("wake")
    await agent.when_idle()
    assert [m.plain_text for m in model.requests[0].messages] == ["after-claim", "wake", "queued"]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_enter_empty_at_the_first_boundary_completes_without_a_step(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))

    async def swallow(step, next):
        return Enter([])

    agent.hooks.pre_step.add(swallow)
    agent.followup("x")
    await agent.when_idle()
    assert trace(agent.events) == ["INS nt 0 ['x']", "TS 1", "CLM nt 1", "TE 1 completed"]
    await agent.close()


async def test_turn_stopping_listener_may_steer_to_continue_the_turn(db):
    model = ScriptedModel(["one", "two"])
    agent = nbagent.open_session(db, model=model)
    rounds = []

    async def loop_once(stop):
        rounds.append(stop.turn)
        if len(rounds) == 1:
            stop.agent.steer("continue")

    agent.hooks.turn_stopping.add(loop_once)
    await agent.run("start")
    lines = trace(agent.events)
    assert lines[lines.index("SE 1.1") :] == [
        "SE 1.1",
        "INS ns 0 ['continue']",
        "CLM ns 1",
        "SS 1.2",
        "UM continue",
        "CH",
        "AM 1.2 'two'",
        "SE 1.2",
        "TE 1 completed",
    ]
    assert lines[-1] == "TE 1 completed" and rounds == [1, 1]
    await agent.close()


async def test_built_in_policy_retries_in_the_same_step(db):
    model = ScriptedModel(
        [
            Response("partial", failure=Failure("busy", "RATE_LIMIT", 429, retry_after_ms=5)),
            Response(failure="SERVER"),
            "ok",
        ]
    )
    agent = nbagent.open_session(db, model=model, retry=FAST)
    r = await agent.run("q")
    lines = trace(agent.events)
    assert lines[lines.index("SS 1.1") :] == [
        "SS 1.1",
        "UM q",
        "RH initial",
        "CH",
        "RETRY 2",
        "CH",
        "RETRY 3",
        "CH",
        "AM 1.1 'ok'",
        "SE 1.1",
        "TE 1 completed",
    ]
    retries = [e.data for e in agent.events if e.type == "llm/retry"]
    assert retries[0]["delay_ms"] == 5 and retries[0]["failure"]["code"] == "RATE_LIMIT"
    assert r.text == "ok" and len(model.requests) == 3
    check_invariants(agent.events, requests=model.requests)
    await agent.close()


async def test_retries_give_up_after_two_and_the_turn_errors_with_the_failure(db):
    model = ScriptedModel([Response(failure=Failure("down", "SERVER", 503))] * 3)
    agent = nbagent.open_session(db, model=model, retry=FAST)
    r = await agent.run("q")
    assert r.end["reason"] == {
        "kind": "error",
        "error": {"message": "down", "code": "SERVER", "status": 503},
    }
    assert len(model.requests) == 3
    auth = ScriptedModel([Response(failure="AUTH")])
    agent.set_model(auth)
    r = await agent.run("again")
    assert r.end["reason"]["error"]["code"] == "AUTH" and len(auth.requests) == 1
    await agent.close()


async def test_a_request_error_listener_can_own_the_retry(db):
    model = ScriptedModel([Response(failure="BAD_REQUEST"), "fixed"])
    agent = nbagent.open_session(db, model=model)
    seen = []

    async def fix(failure, next):
        seen.append((failure.attempt, failure.failure.code))
        return Retry()

    agent.hooks.request_error.add(fix)
    r = await agent.run("q")
    assert r.text == "fixed" and seen == [(1, "BAD_REQUEST")]
    assert "llm/retry" not in [e.type for e in agent.events]
    await agent.close()


async def test_a_stream_without_finish_is_a_transport_failure(db):
    class Truncated:
        name = "truncated"

        async def stream(self, request, signal):
            yield nbagent.models.TextDelta("cut")

    agent = nbagent.open_session(db, model=Truncated(), retry=RetryPolicy(max_retries=0))
    r = await agent.run("q")
    assert r.end["reason"]["error"]["code"] == "TRANSPORT"
    await agent.close()


async def test_session_start_listeners_run_after_open(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    seen = []

    async def startup(start):
        seen.append(start.source)
        start.agent.inject(UserMessage.text("startup context", source={"kind": "plugin", "plugin": "boot"}))

    agent.hooks.session_start.add(startup)
    await asyncio.sleep(0.01)
    assert seen == ["open"] and len(agent.inbox.next_step) == 1
    await agent.close()


@pytest.mark.parametrize("source", ["open", "resume"])
async def test_session_start_listeners_finish_before_the_first_claim(db, source):
    """A waking call made right after opening sees what the listeners injected in its first step."""
    if source == "resume":
        first = nbagent.open_session(db)
        await first.close()
        agent = nbagent.resume_session(db, model=ScriptedModel(["ok"]))
    else:
        agent = nbagent.open_session(db, model=ScriptedModel(["ok"]))
    model = agent.model
    seen = []

    async def startup(start):
        await asyncio.sleep(0)  # a listener that awaits something before it injects
        seen.append(start.source)
        start.agent.inject(UserMessage.text("startup context", source={"kind": "plugin", "plugin": "boot"}))

    agent.hooks.session_start.add(startup)
    agent.followup("right away")
    assert agent.status == "running"
    await agent.when_idle()
    assert seen == [source]
    assert [m.plain_text for m in model.requests[0].messages] == ["startup context", "right away"]
    assert trace(agent.events)[:3] == ["INS nt 0 ['right away']", "INS ns 0 ['startup context']", "TS 1"]
    await agent.close()


async def test_every_hook_payload_carries_the_agent_itself_and_the_driver_holds_no_agent(db):
    """SPEC §3.6: listeners get ``agent``; the driver reaches it only through the agent's hooks."""
    model = ScriptedModel([Response(failure="RATE_LIMIT"), "ok"])
    agent = nbagent.open_session(db, model=model, retry=FAST)
    seen: list[tuple[str, object, object]] = []

    async def on_start(start):
        seen.append(("session_start", start.agent, start.source))

    async def on_pre_step(step, next):
        seen.append(("pre_step", step.agent, step.step))
        return await next()

    async def on_error(failure, next):
        seen.append(("request_error", failure.agent, failure.failure.code))
        return await next()

    async def on_stopping(stop):
        seen.append(("turn_stopping", stop.agent, stop.turn))

    agent.hooks.session_start.add(on_start)
    agent.hooks.pre_step.add(on_pre_step)
    agent.hooks.request_error.add(on_error)
    agent.hooks.turn_stopping.add(on_stopping)
    agent.followup("go")
    await agent.when_idle()
    await agent.close()
    assert seen == [
        ("session_start", agent, "open"),
        ("pre_step", agent, 1),
        ("request_error", agent, "RATE_LIMIT"),
        ("turn_stopping", agent, 1),
    ]
    assert all(value is not agent for value in vars(agent.driver).values())
    config = agent.driver.config
    assert all(getattr(config, f.name) is not agent for f in dataclasses.fields(config))
    assert config.hooks is agent.hooks and agent.hooks.agent is agent
