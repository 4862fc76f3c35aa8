"""MCP servers as tools through the agent API (SPEC §9.7): real servers written with the official SDK
(tests/mcp_servers) over stdio and streamable HTTP, driven by a ScriptedModel."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from mcp_helpers import BROKEN, DEMO, SILENT, free_port, http_demo, new_tag, outcomes, pids_with, wait_until

import nbagent
from nbagent.mcp.results import TEXT_CHARS
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants

pytest.importorskip("mcp")


@pytest.fixture(autouse=True)
def _first_request_waits_for_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first request waits for the tool lists however long a busy machine takes (the servers'
    start, not a short deadline, is what these tests wait on)."""
    from nbagent.mcp import servers

    monkeypatch.setattr(servers, "FIRST_REQUEST_WAIT", 300.0)


def calls(*items: tuple[str, dict[str, Any]], first: int = 1) -> Response:
    """One answer calling ``items``, with call ids ``c<first>``, ``c<first + 1>``…"""
    return Response(
        tool_calls=[ToolCall(name, args, id=f"c{i}") for i, (name, args) in enumerate(items, first)]
    )


def demo_args(tag: str) -> list[str]:
    return [DEMO, "--tag", tag]


class Approver:
    """An ``agent.approver`` that answers ``outcome`` and remembers what it was asked."""

    def __init__(self, outcome: str = "allowed-once") -> None:
        self.outcome = outcome
        self.asked: list[str] = []

    async def __call__(self, tool: Any, call: Any) -> str:
        self.asked.append(tool.name)
        return self.outcome


async def test_a_stdio_server_s_tools_are_offered_with_their_schemas_and_each_call_is_approved(tmp_path):
    tag = new_tag()
    model = ScriptedModel([calls(("demo__add", {"a": 2, "b": 3})), "done"])
    agent = nbagent.open_session(tmp_path / "s.sqlite", model=model)
    approver = Approver()
    agent.approver = approver
    info = agent.add_mcp_server("demo", command=sys.executable, args=demo_args(tag))
    assert info.state == "starting"
    run = await agent.run("add 2 and 3")
    assert run.outcome == "completed"
    offered = {t["name"]: t for t in model.requests[0].tools}
    assert {"demo__add", "demo__write_note", "demo__pixel", "demo__crash", "demo__hang"} <= set(offered)
    assert offered["demo__add"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert offered["demo__add"]["parameters"]["required"] == ["a", "b"]
    assert "Add two integers." in offered["demo__add"]["description"]
    assert outcomes(agent.events)["c1"] == ("2 + 3 = 5", False, None)
    assert approver.asked == ["demo__add"]
    types = [e.type for e in agent.events if e.type.startswith(("tool/", "approval/"))]
    assert types == ["tool/call", "approval/asked", "approval/decided", "tool/result"]
    (listed,) = agent.mcp.list()
    assert (listed.name, listed.transport, listed.state) == ("demo", "stdio", "ready")
    assert "demo__add" in listed.tools
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_read_only_tools_run_without_approval_only_when_allowed(tmp_path):
    notes = tmp_path / "notes.txt"
    model = ScriptedModel(
        [calls(("demo__add", {"a": 1, "b": 1}), ("demo__write_note", {"text": "hello"})), "done"]
    )
    agent = nbagent.open_session(None, model=model)
    approver = Approver("rejected")
    agent.approver = approver
    agent.add_mcp_server(
        "demo",
        command=sys.executable,
        args=demo_args(new_tag()),
        env={"DEMO_NOTES": str(notes)},
        allow_read_only=True,
    )
    await agent.run("go")
    got = outcomes(agent.events)
    assert got["c1"] == ("1 + 1 = 2", False, None)
    assert got["c2"][1:] == (True, "DENIED")
    assert approver.asked == ["demo__write_note"]
    assert not notes.exists()
    asked = [e.data["tool"] for e in agent.events if e.type == "approval/asked"]
    assert asked == ["demo__write_note"]
    await agent.close()


async def test_allowing_read_only_tools_later_applies_from_the_next_request(tmp_path):
    model = ScriptedModel(
        [calls(("demo__add", {"a": 1, "b": 2})), calls(("demo__add", {"a": 3, "b": 4}), first=2), "ok"]
    )
    agent = nbagent.open_session(None, model=model)
    approver = Approver()
    agent.approver = approver
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(new_tag()))

    async def allow_after_first(step: Any, next: Any) -> Any:
        if step.step == 2:
            agent.mcp.allow_read_only = True
        return await next()

    agent.hooks.pre_step.add(allow_after_first, prepend=True)
    await agent.run("go")
    assert approver.asked == ["demo__add"]
    assert outcomes(agent.events)["c2"][0] == "3 + 4 = 7"
    await agent.close()


async def test_results_carry_images_as_blocks_and_long_text_is_bounded(tmp_path):
    model = ScriptedModel([calls(("demo__pixel", {}), ("demo__flood", {"chars": 50_000})), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(new_tag()), allow_read_only=True)
    await agent.run("go")
    results = {
        e.data["message"]["content"][0]["tool_call_id"]: e.data["message"]["content"][0]["content"]
        for e in agent.events
        if e.type == "tool/result"
    }
    (image,) = results["c1"]
    assert image["type"] == "image" and image["mime"] == "image/png" and image["data"].startswith("iVBOR")
    (text,) = results["c2"]
    assert len(text["text"]) < TEXT_CHARS + 100
    assert text["text"].endswith("more characters cut)")
    await agent.close()


async def test_a_tool_error_is_an_error_result_naming_the_server(tmp_path):
    model = ScriptedModel([calls(("demo__refuse", {"why": "no such table"})), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.approver = Approver()
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(new_tag()))
    run = await agent.run("go")
    text, is_error, code = outcomes(agent.events)["c1"]
    assert is_error and code == "MCP_TOOL_ERROR"
    assert "'demo'" in text and "no such table" in text
    assert run.outcome == "completed"
    await agent.close()


async def test_a_server_that_crashes_mid_call_gives_error_results_and_the_turn_goes_on(tmp_path):
    tag = new_tag()
    model = ScriptedModel(
        [calls(("demo__crash", {})), calls(("demo__add", {"a": 1, "b": 1}), first=2), "the server is gone"]
    )
    agent = nbagent.open_session(None, model=model)
    agent.approver = Approver()
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(tag))
    run = await agent.run("go")
    assert run.outcome == "completed"
    crashed = outcomes(agent.events)["c1"]
    assert crashed[1:] == (True, "MCP_SERVER_DIED")
    assert "'demo'" in crashed[0] and "crash" in crashed[0]
    text, is_error, code = outcomes(agent.events)["c2"]
    assert is_error and code == "MCP_SERVER_UNAVAILABLE"
    assert text.startswith("Error: MCP server 'demo' failed: the connection ended during a call to crash")
    assert "demo__add" not in {t["name"] for t in model.requests[2].tools}
    (listed,) = agent.mcp.list()
    assert listed.state == "failed" and "crash" in (listed.reason or "")
    wait_until(lambda: not pids_with(tag), what="the crashed server's process going away")
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_a_call_that_never_gets_an_answer_is_given_up_with_an_error_naming_the_server(tmp_path):
    model = ScriptedModel(
        [calls(("demo__hang", {})), calls(("demo__add", {"a": 2, "b": 2}), first=2), "done"]
    )
    agent = nbagent.open_session(None, model=model)
    agent.approver = Approver()
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(new_tag()), call_timeout=5)
    run = await agent.run("go")
    assert run.outcome == "completed"
    results = [e for e in agent.events if e.type == "tool/result"]
    hung, after = results
    text = hung.data["message"]["content"][0]["content"][0]["text"]
    assert "'demo' did not answer hang within 5 s" in text
    assert hung.data["error"]["code"] == "MCP_TIMEOUT"
    assert after.data["message"]["content"][0]["content"][0]["text"] == "2 + 2 = 4"
    await agent.close()


async def test_a_server_that_never_answers_at_start_fails_its_calls_within_the_start_timeout(tmp_path):
    tag = new_tag()
    model = ScriptedModel([calls(("silent__anything", {"x": 1})), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("silent", command=sys.executable, args=[SILENT, tag], start_timeout=0.5)
    run = await agent.run("go")
    assert run.outcome == "completed"
    assert model.requests[0].tools == ()
    text, is_error, code = outcomes(agent.events)["c1"]
    assert is_error and code == "MCP_SERVER_UNAVAILABLE"
    assert text == "Error: MCP server 'silent' failed: did not finish starting within 0.5 s"
    wait_until(lambda: not pids_with(tag), what="the silent server's process being stopped")
    await agent.close()


async def test_a_server_that_cannot_start_is_named_with_its_stderr(tmp_path):
    model = ScriptedModel([calls(("broken__login", {})), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("broken", command=sys.executable, args=[BROKEN])
    await agent.run("go")
    text, is_error, _ = outcomes(agent.events)["c1"]
    assert is_error
    assert text.startswith("Error: MCP server 'broken' failed: could not start")
    assert "DEMO_TOKEN is not set" in text
    await agent.close()


async def test_a_missing_command_is_an_error_result_not_an_exception(tmp_path):
    model = ScriptedModel([calls(("ghost__x", {})), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("ghost", command=str(tmp_path / "no-such-program"))
    run = await agent.run("go")
    assert run.outcome == "completed"
    text, is_error, _ = outcomes(agent.events)["c1"]
    assert is_error and "'ghost' failed: could not start" in text and "no-such-program" in text
    await agent.close()


async def test_a_streamable_http_server_s_tools_work(tmp_path):
    with http_demo() as url:
        model = ScriptedModel([calls(("web__add", {"a": 20, "b": 22})), "done"])
        agent = nbagent.open_session(None, model=model)
        info = agent.add_mcp_server("web", url=url, allow_read_only=True)
        assert (info.transport, info.target) == ("http", url)
        await agent.run("go")
        assert outcomes(agent.events)["c1"] == ("20 + 22 = 42", False, None)
        await agent.close()


async def test_an_http_server_nobody_serves_fails_with_its_name(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    model = ScriptedModel([calls(("web__add", {"a": 1, "b": 2})), "done"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("web", url=url, start_timeout=10)
    run = await agent.run("go")
    assert run.outcome == "completed"
    text, is_error, _ = outcomes(agent.events)["c1"]
    assert is_error and text.startswith("Error: MCP server 'web' failed: could not start")
    await agent.close()


async def test_a_stdio_server_gets_the_sdk_default_environment_plus_env_and_no_kernel_secret(
    tmp_path, monkeypatch
):
    kernel_key = "sk-kernel-only-0123456789abcdef"
    named_token = "tok-named-for-the-server-42"
    monkeypatch.setenv("NBAGENT_TEST_INHERITED", "from-the-kernel")
    monkeypatch.setenv("OPENAI_API_KEY", kernel_key)
    monkeypatch.setenv("GITHUB_TOKEN", named_token)
    model = ScriptedModel([calls(("demo__printenv", {})), "done"])
    agent = nbagent.open_session(tmp_path / "s.sqlite", model=model)
    agent.add_mcp_server(
        "demo",
        command=sys.executable,
        args=demo_args(new_tag()),
        env={"DEMO_EXTRA": "added", "GITHUB_TOKEN": named_token},
        allow_read_only=True,
    )
    await agent.run("go")
    text, is_error, _ = outcomes(agent.events)["c1"]
    assert not is_error
    seen = dict(line.split("=", 1) for line in text.splitlines())
    assert seen["PATH"] == os.environ["PATH"] and seen["DEMO_EXTRA"] == "added"
    assert "NBAGENT_TEST_INHERITED" not in seen  # only the SDK's default environment is inherited
    assert "OPENAI_API_KEY" not in seen  # a kernel secret the config does not name stays out
    assert seen["GITHUB_TOKEN"] == "[redacted]"  # named, so the server got it; its value is scrubbed
    assert kernel_key not in text and named_token not in text
    sent = json.dumps([r.messages for r in model.requests], default=str)
    logged = (tmp_path / "s.sqlite").read_bytes()
    assert named_token not in sent and named_token.encode() not in logged
    await agent.close()


async def test_the_server_gets_a_named_secret_and_its_value_is_scrubbed_from_results(tmp_path, monkeypatch):
    secret = "pw-only-the-server-needs-777"
    monkeypatch.setenv("DEMO_PASSWORD", secret)
    model = ScriptedModel(
        [calls(("demo__environment", {"name": "DEMO_PASSWORD"}), ("demo__refuse", {"why": secret})), "done"]
    )
    agent = nbagent.open_session(None, model=model)
    agent.approver = Approver()
    agent.add_mcp_server(
        "demo", command=sys.executable, args=demo_args(new_tag()), env={"DEMO_PASSWORD": secret}
    )
    await agent.run("go")
    got = outcomes(agent.events)
    assert got["c1"][0] == "[redacted]"  # not "<unset>": the server has it
    assert secret not in got["c2"][0] and "[redacted]" in got["c2"][0]
    await agent.close()


async def test_close_stops_every_server_process(tmp_path):
    tag = new_tag()
    agent = nbagent.open_session(None, model=ScriptedModel(["hi"]))
    agent.add_mcp_server("one", command=sys.executable, args=demo_args(tag))
    agent.add_mcp_server("two", command=sys.executable, args=demo_args(tag))
    await agent.run("start them")
    assert len(pids_with(tag)) == 2
    await agent.close()
    assert pids_with(tag) == []
    assert [s.state for s in agent.mcp.list()] == ["stopped", "stopped"]


async def test_close_during_a_hanging_call_leaves_no_process(tmp_path):
    tag = new_tag()
    model = ScriptedModel([calls(("demo__hang", {})), "never"])
    agent = nbagent.open_session(None, model=model, cancel_grace=0.5)
    agent.approver = Approver()
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(tag))
    agent.followup("go")

    def hanging() -> bool:
        return any(e.type == "approval/decided" for e in agent.events)

    while not hanging():
        await _tick()
    await agent.close()
    assert pids_with(tag) == []
    assert [e.data["reason"]["kind"] for e in agent.events if e.type == "turn/end"] == ["aborted"]


async def test_remove_stops_the_server_and_withdraws_its_tools(tmp_path):
    tag = new_tag()
    model = ScriptedModel(["first", calls(("demo__add", {"a": 1, "b": 1})), "second"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(tag))
    await agent.run("one")
    assert "demo__add" in {t["name"] for t in model.requests[0].tools}
    assert await agent.mcp.remove("demo") is True
    assert pids_with(tag) == []
    await agent.run("two")
    assert model.requests[1].tools == ()
    _, is_error, code = outcomes(agent.events)["c1"]
    assert is_error and code == "TOOL_NOT_FOUND"
    assert await agent.mcp.remove("demo") is False
    await agent.close()


async def test_name_clashes_are_refused_when_the_server_is_added(tmp_path):
    @nbagent.tool
    def files__read() -> str:
        return ""

    agent = nbagent.open_session(None, model=ScriptedModel([]), tools=[files__read])
    with pytest.raises(ValueError, match="'files__read' already has that prefix"):
        agent.add_mcp_server("files", command=sys.executable, args=[DEMO])
    agent.add_mcp_server("demo", command=sys.executable, args=[DEMO])
    with pytest.raises(ValueError, match="already added"):
        agent.add_mcp_server("demo", url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match="like server 'demo'"):
        agent.add_mcp_server("demo__x", url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match=r"either command= .* or url="):
        agent.add_mcp_server("both", command="x", url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match="not an http"):
        agent.add_mcp_server("ftp", url="ftp://example.org")
    await agent.close()


async def _tick() -> None:
    import asyncio

    await asyncio.sleep(0.02)


async def test_cancelling_the_turn_cancels_a_running_call_and_the_server_stays_up(tmp_path):
    model = ScriptedModel([calls(("demo__hang", {})), calls(("demo__add", {"a": 5, "b": 5}), first=2), "ok"])
    agent = nbagent.open_session(None, model=model, cancel_grace=30)
    agent.approver = Approver()
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(new_tag()))
    agent.followup("go")
    while not any(e.type == "approval/decided" for e in agent.events):
        await _tick()
    agent.cancel()
    await agent.when_idle()
    text, is_error, code = outcomes(agent.events)["c1"]
    assert (is_error, code) == (True, "ABORTED")
    assert "abandoned" not in text  # the call was cancelled, not left running for the grace period
    await agent.run("again")
    assert outcomes(agent.events)["c2"] == ("5 + 5 = 10", False, None)
    await agent.close()


async def test_a_chatty_server_s_stderr_file_is_kept_small(tmp_path, monkeypatch):
    from nbagent.mcp import connection

    monkeypatch.setattr(connection, "STDERR_KEPT", 1000)
    model = ScriptedModel(
        [calls(("demo__chatter", {"lines": 500})), calls(("demo__chatter", {"lines": 2}), first=2), "done"]
    )
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("demo", command=sys.executable, args=demo_args(new_tag()), allow_read_only=True)
    await agent.run("go")
    conn = agent.mcp.connection("demo")
    assert conn is not None
    assert conn.stderr_tail() == "log line 0 | log line 1"  # emptied after the 500 lines, then 2 more
    await agent.close()
