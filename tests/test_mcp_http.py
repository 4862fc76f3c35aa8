"""MCP servers as people configure them (SPEC §9.7): HTTP servers with headers, a 401 that says how to
pass credentials, HTTP+SSE servers, and tools that require MCP tasks left out. Real servers
(tests/mcp_servers) on 127.0.0.1, driven by a ScriptedModel."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from mcp_helpers import TASKS, http_demo, outcomes

import nbagent
from nbagent.mcp import server_spec
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.views import TurnView

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


async def test_a_request_without_a_server_s_tools_says_so_naming_the_server(tmp_path):
    from mcp_helpers import BROKEN

    model = ScriptedModel(["no tools yet", "still none"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("broken", command=sys.executable, args=[BROKEN])
    await agent.run("go")
    await agent.run("again")
    notices = [
        e.data for e in agent.events if e.type == "user/message" and e.data["source"]["kind"] == "plugin"
    ]
    (notice,) = notices  # the first request only
    assert notice["source"]["summary"] == "MCP tools not offered: 'broken'"
    (block,) = notice["content"]
    assert block["text"].startswith("MCP server 'broken' failed: could not start")
    assert "DEMO_TOKEN is not set" in block["text"]
    assert block["text"].endswith("; its tools are not offered in this request")
    assert block["text"] in json.dumps([m.model_dump() for m in model.requests[0].messages])
    cell = TurnView("followup", "go")  # the turn's cell, as the notebook shows it
    cell.claimed(1)
    cell.feed(agent.events)
    assert "MCP server 'broken' failed: could not start" in cell.bundle()["text/plain"]
    await agent.close()


async def test_progress_notifications_of_a_call_show_in_the_turn_s_cell():
    from mcp_helpers import DEMO

    from nbagent import UserMessage
    from nbagent.notebook.magics.live_turn import LiveTurn

    model = ScriptedModel([call("demo__slow", {"steps": 3}), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("demo", command=sys.executable, args=[DEMO], allow_read_only=True)
    message = UserMessage.text("go slowly")
    cell = LiveTurn(agent, message, "followup", _Surface())
    cell.start()  # the cell listens first
    heard: list[tuple[str, str, str]] = []
    agent.mcp.on_progress(lambda tool, text: heard.append((tool, text, cell.view.headline)))
    await agent.run(message)
    assert [(tool, text) for tool, text, _ in heard] == [
        ("demo__slow", f"step {i} of 3 ({i}/3)") for i in (1, 2, 3)
    ]
    assert all(headline.endswith(f"· running · {tool}: {text}") for tool, text, headline in heard)
    assert "demo__slow:" not in cell.view.headline  # gone once the call ended
    assert outcomes(agent.events)["c1"] == ("did 3 steps", False, None)
    cell.stop()
    await agent.close()


class _Surface:
    def show(self, data: dict[str, Any]) -> None:
        pass

    def update(self, data: dict[str, Any]) -> None:
        pass
