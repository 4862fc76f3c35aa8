"""The wake latch, ``when_idle()`` and per-thread call order (SPEC §1 latch, §3.2, §3.3)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from eventtrace import trace, without_headers

import nbagent
from nbagent.models import Finish, ScriptedModel, TextDelta
from nbagent.testing import check_invariants


def from_a_worker_while_the_loop_is_busy(calls) -> None:
    """Run ``calls`` on another thread while the loop's thread is blocked (as when a notebook's
    kernel thread calls while the agent's loop is busy): nothing the calls hand to the loop runs
    before they all return."""
    worker = threading.Thread(target=calls)
    worker.start()
    worker.join()


class StallsFirst:
    """The first request streams ``Hel`` and waits until cancelled; later ones answer at once."""

    name = "stalls-first"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.requests = 0

    async def stream(self, request, signal):
        self.requests += 1
        if self.requests == 1:
            yield TextDelta("Hel")
            self.started.set()
            await signal.wait()
            return
        last = request.messages[-1]
        yield TextDelta(f"answered {last.plain_text}")
        yield Finish("stop")


async def test_a_running_callback_that_cancels_then_follows_up_replays_the_followup(db):
    """dsh S30: B is re-targeted and latched while the cancelled driver has not opened a turn;
    the driver's stop replays it (status idle, then running) and no stale latch remains."""
    agent = nbagent.open_session(db, model=ScriptedModel(["answered B"]))
    statuses: list[str] = []
    armed = [True]

    def on_status(notice) -> None:
        statuses.append(notice.status)
        if notice.status == "running" and armed:
            armed.clear()
            agent.cancel()
            agent.followup("B")

    agent.on("status", on_status)
    agent.followup("A")
    await agent.when_idle()
    assert without_headers(trace(agent.events)) == [
        "INS nt 0 ['A']",
        "CAN nt 0 1",
        "INS nt 0 ['B']",
        "TS 1",
        "CLM nt 1",
        "SS 1.1",
        "UM B",
        "CH",
        "AM 1.1 'answered B'",
        "SE 1.1",
        "TE 1 completed",
    ]
    assert statuses == ["running", "idle", "running", "idle"]
    assert not agent.driver.life.latched and agent.status == "idle"
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_when_idle_waits_for_a_turn_an_idle_callback_starts(db):
    """``when_idle()`` (and so ``run()``) used to resolve while the new turn ran."""
    agent = nbagent.open_session(db)
    armed = [True]

    def on_status(notice) -> None:
        if notice.status == "idle" and armed:
            armed.clear()
            agent.followup("second")

    agent.on("status", on_status)
    run = await agent.run("first")
    assert agent.status == "idle"
    assert run.turns == (1, 2)
    assert run.text is not None and run.text.endswith("second")
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_when_idle_waits_for_a_turn_started_before_the_waiter_runs(db):
    """A followup scheduled with ``call_soon`` from an idle callback runs before the resolved
    waiter resumes: the waiter sees the agent running again and keeps waiting."""
    agent = nbagent.open_session(db)
    loop = asyncio.get_running_loop()
    armed = [True]

    def on_status(notice) -> None:
        if notice.status == "idle" and armed:
            armed.clear()
            loop.call_soon(agent.followup, "later")

    agent.on("status", on_status)
    await agent.run("now")
    assert agent.status == "idle"
    assert [e.data["turn"] for e in agent.events if e.type == "turn/end"] == [1, 2]
    await agent.close()


async def test_cancel_then_followup_from_a_worker_thread_take_effect_in_that_order(db):
    """The cancel used to be deferred to the loop while B's splice committed at once, so B was
    cancelled by a cancel made before it existed."""
    model = StallsFirst()
    agent = nbagent.open_session(db, model=model)
    agent.followup("A")
    await model.started.wait()

    def worker() -> None:
        agent.cancel()
        agent.followup("B")

    from_a_worker_while_the_loop_is_busy(worker)
    await agent.when_idle()
    lines = without_headers(trace(agent.events))
    assert lines.count("INS nt 0 ['B']") == 1  # before or after TE 1: the worker races the loop
    lines.remove("INS nt 0 ['B']")
    end = lines.index("TE 1 aborted:user")
    assert lines[end + 1 :] == [
        "TS 2",
        "CLM nt 1",
        "SS 2.1",
        "UM B",
        "CH",
        "AM 2.1 'answered B'",
        "SE 2.1",
        "TE 2 completed",
    ]
    assert not any(x.startswith("CAN") for x in lines)
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_cancel_keeping_the_inbox_then_followup_from_a_worker_latches_the_followup(db):
    """With ``keep_inbox`` B used to be parked and never latched: it waited for another call."""
    model = StallsFirst()
    agent = nbagent.open_session(db, model=model)
    agent.followup("A")
    await model.started.wait()

    def worker() -> None:
        agent.cancel(keep_inbox=True)
        agent.followup("B")

    from_a_worker_while_the_loop_is_busy(worker)
    await agent.when_idle()
    lines = without_headers(trace(agent.events))
    assert lines[-1] == "TE 2 completed" and "UM B" in lines
    assert not agent.inbox.has_pending
    await agent.close()


async def test_followup_then_cancel_from_a_worker_cancels_the_followup(db):
    model = StallsFirst()
    agent = nbagent.open_session(db, model=model)
    agent.followup("A")
    await model.started.wait()

    def worker() -> None:
        agent.followup("B")
        agent.cancel()

    from_a_worker_while_the_loop_is_busy(worker)
    await agent.when_idle()
    lines = without_headers(trace(agent.events))
    assert lines[-1] == "TE 1 aborted:user"
    assert "CAN nt 0 1" in lines and "UM B" not in lines
    assert not agent.inbox.has_pending
    await agent.close()


async def test_wake_starts_a_turn_for_pending_work_and_says_whether_it_did(db):
    """SPEC §11.1: ``agent.wake()`` starts a turn when idle with something queued, adds no message,
    and returns whether a turn started; a resumed session's parked followup runs that way."""
    agent = nbagent.open_session(db, model=ScriptedModel(["first", "parked answered"]))
    assert agent.wake() is False  # nothing queued: no turn
    agent.inbox.append("next-turn", "parked")  # queued without waking, as a restart leaves it
    await agent.close()
    resumed = nbagent.resume_session(db, agent.session_id, model=ScriptedModel(["parked answered"]))
    assert resumed.status == "idle" and len(resumed.inbox.next_turn) == 1
    assert resumed.wake() is True
    assert resumed.wake() is False  # already running
    await resumed.when_idle()
    events = resumed.events
    assert [e.data["turn"] for e in events if e.type == "turn/start"] == [1]
    assert sum(e.type == "user/message" for e in events) == 1
    assert resumed.inbox.has_pending is False
    check_invariants(events)
    await resumed.close()
    with pytest.raises(nbagent.SessionClosedError):
        resumed.wake()
