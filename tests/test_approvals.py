"""Tools that need approval: exactly one decision per question, inside the turn (SPEC §9.4)."""

from __future__ import annotations

import asyncio

import pytest
from eventtrace import trace

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.session import repair_drafts
from nbagent.testing import check_invariants

ran: list[str] = []


@nbagent.tool(requires_approval=True)
def run_code(code: str) -> str:
    """Run code in the kernel."""
    ran.append(code)
    return "ran"


def approvals(agent):
    return [(e.type, e.data.get("outcome")) for e in agent.events if e.type.startswith("approval/")]


@pytest.mark.parametrize(
    ("answer", "code"), [("allowed-once", None), ("rejected", "DENIED"), (None, "DENIED")]
)
async def test_each_question_gets_exactly_one_decision(db, answer, code):
    ran.clear()
    model = ScriptedModel([Response(tool_calls=[ToolCall("run_code", {"code": "1+1"}, id="c1")]), "after"])
    agent = nbagent.open_session(db, model=model, tools=[run_code])
    if answer is not None:

        async def approver(tool, call):
            assert (tool.name, call.id) == ("run_code", "c1")
            return answer

        agent.approver = approver
    await agent.run("go")
    expected = answer or "unavailable"
    assert approvals(agent) == [("approval/asked", None), ("approval/decided", expected)]
    lines = trace(agent.events)
    assert lines[lines.index("TC c1") : lines.index("TC c1") + 4] == [
        "TC c1",
        "approval/asked",
        "approval/decided",
        "TR c1" + (f" {code}" if code else ""),
    ]
    assert ran == (["1+1"] if answer == "allowed-once" else [])
    check_invariants(agent.events, requests=model.requests)
    await agent.close()


async def waiting_for_approval(path):
    """An agent whose turn is blocked in an approver that never answers."""
    asked = asyncio.Event()

    async def approver(tool, call):
        asked.set()
        await asyncio.Event().wait()

    model = ScriptedModel([Response(tool_calls=[ToolCall("run_code", {"code": "x"}, id="c1")])])
    agent = nbagent.open_session(path, model=model, tools=[run_code])
    agent.approver = approver
    agent.followup("go")
    await asked.wait()
    return agent


async def test_cancel_while_waiting_for_approval_closes_it_cancelled_before_the_aborted_result(db):
    agent = await waiting_for_approval(db)
    agent.cancel()
    await agent.when_idle()
    assert approvals(agent) == [("approval/asked", None), ("approval/decided", "cancelled")]
    assert trace(agent.events)[-4:] == [
        "approval/decided",
        "TR c1 ABORTED",
        "SE 1.1",
        "TE 1 aborted:user",
    ]
    await agent.close()


async def test_repair_closes_a_pending_approval_as_unavailable_first(db):
    agent = await waiting_for_approval(None)
    events = list(agent.events)
    agent.cancel()
    await agent.when_idle()
    start = next(i for i, e in enumerate(events) if e.type == "turn/start")
    drafts = repair_drafts(events[start:])
    assert [
        (t, d.get("outcome") or d.get("error", {}).get("code") or d.get("reason", {}).get("kind"))
        for t, d in ((r.type, r.to_json()) for r in drafts)
    ] == [
        ("approval/decided", "unavailable"),
        ("tool/result", "TOOL_OUTCOME_UNKNOWN"),
        ("step/end", None),
        ("turn/end", "interrupted"),
    ]
