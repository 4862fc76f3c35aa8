"""Tool batches: model order, contexts after all results, parallel runs, errors (SPEC §3.6, §5.4)."""

from __future__ import annotations

import asyncio

from eventtrace import trace

import nbagent
from nbagent import ToolResult, UserMessage
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants


async def test_inject_during_a_tool_batch_lands_after_the_complete_results(db):
    box: list[nbagent.Agent] = []

    @nbagent.tool
    def first() -> str:
        box[0].inject(UserMessage.text("mid-batch", source={"kind": "cell"}))
        return "r1"

    @nbagent.tool
    def second() -> str:
        return "r2"

    model = ScriptedModel(
        [Response(tool_calls=[ToolCall("first", id="c1"), ToolCall("second", id="c2")]), "end"]
    )
    agent = nbagent.open_session(db, model=model, tools=[first, second])
    box.append(agent)
    agent.followup("go")
    await agent.when_idle()
    lines = trace(agent.events)
    start = lines.index("AM 1.1 ['c1', 'c2']")
    assert lines[start:] == [
        "AM 1.1 ['c1', 'c2']",
        "TC c1",
        "INS ns 0 ['mid-batch']",
        "TR c1",
        "TC c2",
        "TR c2",
        "SE 1.1",
        "CLM ns 1",
        "SS 1.2",
        "UM mid-batch",
        "CH",
        "AM 1.2 'end'",
        "SE 1.2",
        "TE 1 completed",
    ]
    roles = [(m.role, m.kind) for m in model.requests[1].messages]
    assert roles == [
        ("user", "user"),
        ("assistant", "model"),
        ("user", "tool"),
        ("user", "tool"),
        ("user", "cell"),
    ]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_two_tools_additional_contexts_are_fifo_with_their_own_sources(db):
    @nbagent.tool
    def lookup(key: str) -> ToolResult:
        """Look a key up."""
        extra = UserMessage.text(f"ctx-{key}", source={"kind": "plugin", "plugin": f"p-{key}"})
        return ToolResult(f"value of {key}", additional_contexts=[extra])

    model = ScriptedModel(
        [
            Response(
                tool_calls=[
                    ToolCall("lookup", {"key": "a"}, id="c1"),
                    ToolCall("lookup", {"key": "b"}, id="c2"),
                ]
            ),
            "ok",
        ]
    )
    agent = nbagent.open_session(db, model=model, tools=[lookup])
    agent.followup("go")
    await agent.when_idle()
    lines = trace(agent.events)
    start = lines.index("TC c1")
    assert lines[start : start + 10] == [
        "TC c1",
        "TR c1",
        "INS ns 0 ['ctx-a']",
        "TC c2",
        "TR c2",
        "INS ns 1 ['ctx-b']",
        "SE 1.1",
        "CLM ns 2",
        "SS 1.2",
        "UM ctx-a",
    ]
    assert lines[start + 10] == "UM ctx-b"
    last = model.requests[1].messages
    assert [m.source for m in last[-2:]] == [
        {"kind": "plugin", "plugin": "p-a"},
        {"kind": "plugin", "plugin": "p-b"},
    ]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_parallel_safe_calls_run_together_and_commit_in_model_order(db):
    order: list[str] = []

    @nbagent.tool(parallel_safe=True)
    async def slow(name: str, delay: float) -> str:
        await asyncio.sleep(delay)
        order.append(name)
        return name

    calls = [
        ToolCall("slow", {"name": "A", "delay": 0.05}, id="a"),
        ToolCall("slow", {"name": "B", "delay": 0.0}, id="b"),
    ]
    model = ScriptedModel([Response(tool_calls=calls), "done"])
    agent = nbagent.open_session(db, model=model, tools=[slow])
    await agent.run("go")
    lines = trace(agent.events)
    start = lines.index("TC a")
    assert lines[start : start + 4] == ["TC a", "TC b", "TR a", "TR b"]
    assert order == ["B", "A"]
    check_invariants(agent.events, requests=model.requests)
    await agent.close()


async def test_unknown_tools_bad_arguments_and_exceptions_become_error_results(db):
    @nbagent.tool
    def div(a: int, b: int) -> float:
        return a / b

    calls = [
        ToolCall("nope", id="c1"),
        ToolCall("div", '{"a": 1', id="c2"),
        ToolCall("div", {"a": "x", "b": 1}, id="c3"),
        ToolCall("div", {"a": 1, "b": 0}, id="c4"),
        ToolCall("div", {"a": 6, "b": 3}, id="c5"),
    ]
    model = ScriptedModel([Response(tool_calls=calls), "fine"])
    agent = nbagent.open_session(db, model=model, tools=[div])
    r = await agent.run("go")
    assert r.end["reason"]["kind"] == "completed"
    results = [e.data for e in agent.events if e.type == "tool/result"]
    assert [d.get("error", {}).get("code") for d in results] == [
        "TOOL_NOT_FOUND",
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "TOOL_ERROR",
        None,
    ]
    texts = [d["message"]["content"][0]["content"][0]["text"] for d in results]
    assert "ZeroDivisionError" in texts[3] and texts[4] == "2.0"
    assert all(d["message"]["content"][0]["is_error"] for d in results[:4])
    check_invariants(agent.events, requests=model.requests)
    await agent.close()


async def test_concludes_turn_ends_after_the_step_without_another_model_call(db):
    @nbagent.tool
    def finish() -> ToolResult:
        return ToolResult("done", concludes_turn=True)

    model = ScriptedModel([Response(tool_calls=[ToolCall("finish", id="c1")])])
    agent = nbagent.open_session(db, model=model, tools=[finish])
    r = await agent.run("go")
    assert trace(agent.events)[-3:] == ["TR c1", "SE 1.1", "TE 1 completed"]
    assert len(model.requests) == 1 and r.end["reason"] == {"kind": "completed"}
    await agent.close()


async def test_max_tokens_drops_tool_calls_and_is_sticky(db):
    @nbagent.tool
    def never() -> str:
        raise AssertionError("a max-tokens answer's calls must never run")

    box: list[nbagent.Agent] = []

    def truncated(request):
        box[0].inject(UserMessage.text("more", source={"kind": "cell"}))
        return Response("partial", tool_calls=[ToolCall("never", id="c1")], finish="max-tokens")

    model = ScriptedModel([truncated, "complete"])
    agent = nbagent.open_session(db, model=model, tools=[never])
    box.append(agent)
    await agent.run("go")
    lines = trace(agent.events)
    assert "AM 1.1 'partial'" in lines and not any(x.startswith("TC") for x in lines)
    assert lines[-1] == "TE 1 max-tokens"
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "user"]
    check_invariants(agent.events, requests=model.requests)
    await agent.close()


def test_tool_schema_comes_from_type_hints_and_docstring():
    @nbagent.tool
    def search(query: str, limit: int = 10, signal=None) -> list[str]:
        """Search the notes.

        Args:
            query: what to look for
            limit: how many hits at most
        """
        return []

    assert search.schema == {
        "name": "search",
        "description": "Search the notes.",
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "query": {"description": "what to look for", "type": "string"},
                "limit": {"default": 10, "description": "how many hits at most", "type": "integer"},
            },
            "required": ["query"],
            "type": "object",
        },
    }


async def test_step_limit_ends_the_turn_with_an_error(db):
    @nbagent.tool
    def again() -> str:
        return "again"

    model = ScriptedModel([Response(tool_calls=[ToolCall("again")]) for _ in range(3)])
    agent = nbagent.open_session(db, model=model, tools=[again], max_steps=2)
    r = await agent.run("loop")
    assert r.end["reason"]["kind"] == "error" and r.end["reason"]["error"]["code"] == "STEP_LIMIT"
    assert len(model.requests) == 2
    check_invariants(agent.events, requests=model.requests)
    await agent.close()


async def test_the_step_limit_claims_nothing_for_the_step_that_will_not_run(db):
    """Context injected during the last allowed step stays pending: the limit is checked before
    the boundary claims (it used to be claimed, and lost, by a step that never ran)."""
    box: list[nbagent.Agent] = []

    @nbagent.tool
    def look() -> str:
        """Looks, and meanwhile the user injects context."""
        box[0].inject(UserMessage.text("context for later", source={"kind": "cell"}))
        return "looked"

    model = ScriptedModel([Response(tool_calls=[ToolCall("look", {}, id="c1")]), Response("next time")])
    agent = nbagent.open_session(db, model=model, tools=[look], max_steps=1)
    box.append(agent)
    r = await agent.run("look once")
    assert r.end["reason"]["error"]["code"] == "STEP_LIMIT"
    assert trace(agent.events)[-5:] == [
        "TC c1",
        "INS ns 0 ['context for later']",
        "TR c1",
        "SE 1.1",
        "TE 1 error:STEP_LIMIT",
    ]
    assert [m.plain_text for m in agent.inbox.next_step] == ["context for later"]
    r = await agent.run("again")
    assert r.text == "next time"
    assert [m.plain_text for m in model.requests[1].messages[-2:]] == ["context for later", "again"]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()
