"""MCP servers as people configure them (SPEC §9.7): HTTP servers with headers, a 401 that says how to
pass credentials, HTTP+SSE servers, and tools that require MCP tasks left out. Real servers
(tests/mcp_servers) on 127.0.0.1, driven by a ScriptedModel."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from mcp_helpers import TASKS, http_demo, outcomes

import nbagent
from nbagent.mcp import server_spec
from nbagent.models import Response, ScriptedModel, ToolCall

pytest.importorskip("mcp")

TOKEN = "t0ken-for-the-demo-server-123"


@pytest.fixture(autouse=True)
def _first_request_waits_for_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first request waits for the tool lists however long a busy machine takes."""
    from nbagent.mcp import servers

    monkeypatch.setattr(servers, "FIRST_REQUEST_WAIT", 300.0)


def call(name: str, arguments: dict[str, Any]) -> Response:
    return Response(tool_calls=[ToolCall(name, arguments, id="c1")])


async def test_headers_reach_an_http_server_that_wants_them():
    with http_demo(token=TOKEN) as url:
        model = ScriptedModel([call("web__add", {"a": 1, "b": 2}), "done"])
        agent = nbagent.open_session(None, model=model)
        agent.add_mcp_server(
            "web", url=url, headers={"Authorization": f"Bearer {TOKEN}"}, allow_read_only=True
        )
        await agent.run("go")
        assert outcomes(agent.events)["c1"] == ("1 + 2 = 3", False, None)
        await agent.close()


async def test_a_401_says_the_server_wants_credentials_and_how_to_pass_them():
    with http_demo(token=TOKEN) as url:
        model = ScriptedModel([call("web__add", {"a": 1, "b": 2}), "done"])
        agent = nbagent.open_session(None, model=model)
        agent.add_mcp_server("web", url=url, headers={"Authorization": "Bearer wrong"})
        run = await agent.run("go")
        assert run.outcome == "completed"
        text, is_error, _ = outcomes(agent.events)["c1"]
        assert is_error
        assert "answered 401 Unauthorized: it wants credentials" in text
        assert "headers={'Authorization': 'Bearer …'}" in text and '"headers"' in text
        assert "OAuth" in text
        (listed,) = agent.mcp.list()
        assert listed.state == "failed" and "401" in (listed.reason or "")
        await agent.close()


async def test_an_sse_server_is_used_through_the_sdk_s_sse_client():
    with http_demo(sse=True, token=TOKEN) as url:
        model = ScriptedModel([call("old__add", {"a": 20, "b": 22}), "done"])
        agent = nbagent.open_session(None, model=model)
        spec = server_spec(
            "old", url=url, sse=True, headers={"Authorization": f"Bearer {TOKEN}"}, allow_read_only=True
        )
        info = agent.mcp.add(spec)
        assert (info.transport, info.target) == ("sse", url)
        await agent.run("go")
        assert outcomes(agent.events)["c1"] == ("20 + 22 = 42", False, None)
        await agent.close()


async def test_a_tool_that_requires_mcp_tasks_is_not_offered():
    model = ScriptedModel([call("tasks__now", {}), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.approver = _allow
    agent.add_mcp_server("tasks", command=sys.executable, args=[TASKS])
    await agent.run("go")
    offered = {t["name"] for t in model.requests[0].tools}
    assert "tasks__now" in offered and "tasks__research" not in offered
    assert outcomes(agent.events)["c1"] == ("12:00", False, None)
    (listed,) = agent.mcp.list()
    assert listed.tools == ("tasks__now", "tasks__confirm")
    assert listed.skipped == ("research (it runs only as an MCP task, which nbagent does not support)",)
    await agent.close()


async def _allow(tool: Any, call: Any) -> str:
    return "allowed-once"


async def test_an_elicitation_request_is_declined_and_the_call_s_result_says_so():
    model = ScriptedModel([call("bare__confirm", {}), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.approver = _allow
    agent.add_mcp_server("bare", command=sys.executable, args=[TASKS])
    run = await agent.run("go")
    assert run.outcome == "completed"
    text, is_error, _ = outcomes(agent.events)["c1"]
    assert not is_error, text
    assert text == (
        "the client answered: decline[nbagent: MCP server 'bare' asked the user for input "
        "('Delete everything?') and nbagent declined; elicitation is not supported yet]"
    )
    await agent.close()
