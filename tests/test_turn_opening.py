"""A wake's turn opens even when a ``"status"`` callback removed its message before the claim
(SPEC §3.2, §5.2): the first claim is empty and the turn closes ``completed`` with no step. Only a
``cancel()`` prevents the turn, as a worker's followup-then-cancel shows (issue 32, item 11). On
SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from eventtrace import trace, without_headers

import nbagent
from nbagent.models import ScriptedModel
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


@pytest.mark.parametrize("wake", ["followup", "steer"])
async def test_a_status_callback_that_removes_the_waking_message_still_opens_the_turn(db, wake) -> None:
    model = ScriptedModel(["never asked", "answered B"])
    agent = nbagent.open_session(db, model=model)
    statuses: list[str] = []

    def on_status(notice) -> None:
        statuses.append(notice.status)
        if notice.status == "running" and len(statuses) == 1:
            agent.inbox.clear()

    agent.on("status", on_status)
    getattr(agent, wake)("A")
    await agent.when_idle()
    queue = "nt" if wake == "followup" else "ns"
    assert without_headers(trace(agent.events)) == [
        f"INS {queue} 0 ['A']",
        f"CAN {queue} 0 1",
        "TS 1",
        "TE 1 completed",
    ]
    assert statuses == ["running", "idle"] and agent.status == "idle"
    run = await agent.run("B")  # the session goes on: the next turn is 2
    assert run.outcome == "completed" and run.text == "never asked"
    assert "TS 2" in without_headers(trace(agent.events))
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_a_status_callback_that_cancels_opens_no_turn(db) -> None:
    agent = nbagent.open_session(db, model=ScriptedModel(["never asked"]))

    def on_status(notice) -> None:
        if notice.status == "running":
            agent.cancel()

    agent.on("status", on_status)
    agent.followup("A")
    await agent.when_idle()
    assert without_headers(trace(agent.events)) == ["INS nt 0 ['A']", "CAN nt 0 1"]
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()
