"""The timeline view model: the one fold of real session logs, its patches and its ready-made words."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import nbagent
from nbagent import ToolResult, UserMessage
from nbagent.log.events import Event
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.views import Timeline, apply_patches, message_nodes, project, timeline_json


@nbagent.tool
def lookup(key: str) -> ToolResult:
    """Look something up, adding a plugin context for the next step."""
    context = UserMessage.text(f"note about {key}", source={"kind": "plugin", "plugin": "notes"})
    return ToolResult(f"value of {key}", additional_contexts=[context])


Drive = Callable[[nbagent.Agent], Awaitable[None]]


async def run_session(script: list[Any], drive: Drive, **options: Any) -> tuple[Event, ...]:
    """Open an in-memory session with a scripted model, run ``drive(agent)`` and return its log."""
    agent = nbagent.open_session(None, model=ScriptedModel(script), tools=[lookup], **options)
    await drive(agent)
    await agent.when_idle()
    events = agent.events
    await agent.close()
    return events


def followup(text: str) -> Drive:
    async def drive(agent: nbagent.Agent) -> None:
        agent.followup(text)

    return drive


async def inject_then_followup(agent: nbagent.Agent) -> None:
    agent.inject(UserMessage.text("<dataframe name='df'>\na,b\n1,2\n</dataframe>", source=_df_source()))
    agent.followup("Summarise df")


def _df_source() -> dict[str, Any]:
    return {"kind": "dataframe", "name": "df", "library": "pandas", "shape": [3, 2], "columns": ["a", "b"],
            "form": "snapshot"}  # fmt: skip


def _without_times(node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in ("start", "end", "duration_text", "message_id")}


async def test_messages_appear_in_the_order_the_model_received_them_with_one_label_each() -> None:
    events = await run_session([Response("ok")], inject_then_followup)
    nodes = message_nodes(project(events).nodes)
    assert [(n["badge"], n["label"], n["first_line"], n["more_text"], n["size_text"]) for n in nodes] == [
        ("dataframe", "df · 3×2 · pandas", "3 rows × 2 columns: a, b", "+1 line", "42 B"),
        ("followup", "", "Summarise df", "", "12 B"),
    ]
    assert nodes[0]["text"] == "<dataframe name='df'>\na,b\n1,2\n</dataframe>"
    assert nodes[0]["source"] == _df_source()


async def test_a_turn_groups_its_steps_and_carries_its_outcome_in_words() -> None:
    events = await run_session([Response("ok")], inject_then_followup)
    nodes = project(events).nodes
    assert _without_times(nodes["turn-1"]) == {
        "id": "turn-1", "type": "turn", "parent": None, "seq": 2, "turn": 1, "status": "completed",
        "status_text": "completed", "title": "Summarise df", "outcome": "completed", "why": None,
        "steps": 1, "steps_text": "1 step", "sent_tokens": 68, "sent_tokens_text": "≈68 tokens sent",
    }  # fmt: skip
    assert [(n["type"], n["parent"]) for n in nodes.values()] == [
        ("turn", None),
        ("mark", "turn-1"),  # claim of next-step
        ("mark", "turn-1"),  # claim of next-turn
        ("step", "turn-1"),
        ("message", "step-1-1"),
        ("message", "step-1-1"),
        ("assistant", "step-1-1"),
    ]
    assert [n["text"] for n in nodes.values() if n["type"] == "mark"] == [
        "took from next-step: dataframe df · 3×2 · pandas",
        "took from next-turn: followup «Summarise df»",
    ]


async def test_a_failed_turn_says_why_in_its_head_and_in_full() -> None:
    events = await run_session([Response("partial", failure="AUTH")], followup("go"))
    turn = project(events).nodes["turn-1"]
    assert (turn["status"], turn["status_text"]) == ("error", "failed")
    assert turn["outcome"] == "failed: AUTH: scripted AUTH failure"
    assert turn["why"] == "AUTH: scripted AUTH failure"


async def test_a_canceled_turn_says_who_canceled_it() -> None:
    async def drive(agent: nbagent.Agent) -> None:
        agent.followup("go")
        agent.cancel()

    turn = project(await run_session([Response("never")], drive)).nodes["turn-1"]
    assert (turn["status"], turn["status_text"], turn["outcome"]) == (
        "aborted",
        "canceled",
        "canceled by you",
    )


async def test_streamed_text_accumulates_and_the_final_message_settles_it() -> None:
    events = await run_session([Response("hello world\nsecond line", chunk_size=3)], followup("hi"))
    answer = project(events).nodes["answer-1-1"]
    assert (answer["text"], answer["first_line"], answer["streaming"], answer["failed"]) == (
        "hello world\nsecond line",
        "hello world",
        False,
        False,
    )


async def test_tool_calls_carry_arguments_results_and_outcome_and_their_contexts_name_the_tool() -> None:
    script = [Response(tool_calls=[ToolCall("lookup", {"key": "k1"})]), Response("done")]
    nodes = project(await run_session(script, followup("look it up"))).nodes
    tool = next(n for n in nodes.values() if n["type"] == "tool")
    assert (tool["name"], tool["arguments"], tool["result"], tool["is_error"], tool["outcome"]) == (
        "lookup",
        '{"key": "k1"}',
        "value of k1",
        False,
        "done",
    )
    context = message_nodes(nodes)[-1]
    assert (context["kind"], context["role"], context["via"], context["parent"]) == (
        "plugin",
        "tool-context",
        "lookup",
        "step-1-2",
    )
    assert message_nodes(nodes)[0]["via"] is None


async def test_a_labelled_one_line_result_shows_its_value_on_the_tool_line() -> None:
    @nbagent.tool
    def compute() -> str:
        """Report as run_code does: a label line, then the value."""
        return "result:\n2"

    @nbagent.tool
    def printing() -> str:
        """Report stdout and a result."""
        return "stdout:\nhello\n\nresult:\nNone"

    agent = nbagent.open_session(None, model=ScriptedModel([Response(tool_calls=[ToolCall("compute", {}),
                                 ToolCall("printing", {})]), "ok"]), tools=[compute, printing])  # fmt: skip
    agent.followup("go")
    await agent.when_idle()
    events = agent.events
    await agent.close()
    lines = [n["result_line"] for n in project(events).nodes.values() if n["type"] == "tool"]
    assert lines == ["result: 2", "stdout: hello"]


async def test_a_retry_is_its_own_node_and_the_failed_attempt_is_kept_apart() -> None:
    script = [Response("partial", failure="RATE_LIMIT"), Response("recovered")]
    policy = nbagent.RetryPolicy(base_delay_ms=1, jitter=0)
    nodes = project(await run_session(script, followup("go"), retry=policy)).nodes
    retry = next(n for n in nodes.values() if n["type"] == "retry")
    assert (retry["attempt"], retry["code"], retry["text"], retry["why"]) == (
        2,
        "RATE_LIMIT",
        "retrying (attempt 2) in 1 ms after RATE_LIMIT",
        "scripted RATE_LIMIT failure",
    )
    answers = [n for n in nodes.values() if n["type"] == "assistant"]
    assert [(a["id"], a["text"], a["failed"], a["outcome"]) for a in answers] == [
        ("answer-1-1", "partial", True, "failed attempt"),
        ("answer-1-1-a2", "recovered", False, ""),
    ]


async def test_approvals_are_nodes_that_record_the_decision() -> None:
    @nbagent.tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Delete a file."""
        return f"wiped {path}"

    async def deny(_tool: Any, _call: Any) -> str:
        return "rejected"

    agent = nbagent.open_session(None, model=ScriptedModel([Response(tool_calls=[ToolCall("wipe", {"path": "x"})]), "ok"]),
                                 tools=[wipe])  # fmt: skip
    agent.approver = deny
    agent.followup("clean up")
    await agent.when_idle()
    events = agent.events
    await agent.close()
    nodes = project(events).nodes
    approval = next(n for n in nodes.values() if n["type"] == "approval")
    assert (approval["tool"], approval["outcome"], approval["text"]) == ("wipe", "rejected", "wipe: denied")
    tool = next(n for n in nodes.values() if n["type"] == "tool")
    assert tool["is_error"] and tool["outcome"].startswith("failed")


async def test_a_canceled_pending_message_is_a_mark_naming_the_item() -> None:
    async def drive(agent: nbagent.Agent) -> None:
        m = agent.inject(UserMessage.text("stale context", source={"kind": "cell"}))
        agent.inbox.remove(m.id)

    timeline = project(await run_session([], drive))
    assert list(timeline.nodes.values()) == [
        {"id": "mark-1", "type": "mark", "parent": None, "seq": 1, "mark": "cancel", "queue": "next-step",
         "items": ["cell «stale context»"],
         "text": "canceled from next-step before the model saw it: cell «stale context»"},
    ]  # fmt: skip
    assert timeline.pending == {"next-step": [], "next-turn": []}


async def test_a_steer_and_a_followup_are_told_apart() -> None:
    def slow(_request: Any) -> Response:
        return Response("first")

    async def drive(agent: nbagent.Agent) -> None:
        agent.followup("start")
        agent.steer("narrow it down")

    nodes = message_nodes(project(await run_session([slow, "second"], drive)).nodes)
    assert [(n["badge"], n["role"]) for n in nodes] == [("followup", "followup"), ("steer", "steer")]


async def test_the_inbox_is_replayed_from_the_splices() -> None:
    async def drive(agent: nbagent.Agent) -> None:
        agent.inject(
            UserMessage.text("line one\nline two\nline three", source={"kind": "cell", "label": "notes"})
        )
        agent.inbox.append("next-turn", UserMessage.text("And last year?"))

    bundle = timeline_json(await run_session([], drive))
    step, turn = bundle["pending"]["next_step"], bundle["pending"]["next_turn"]
    assert [(m["badge"], m["label"], m["first_line"], m["more_text"]) for m in step] == [
        ("cell", "notes", "line one", "+2 lines")
    ]
    assert [(m["badge"], m["first_line"]) for m in turn] == [("followup", "And last year?")]


async def test_unknown_source_kinds_and_event_types_are_kept() -> None:
    async def drive(agent: nbagent.Agent) -> None:
        agent.inject(UserMessage.text("hm", source={"kind": "telemetry", "label": "probe"}))
        agent.followup("go")

    events = await run_session(["ok"], drive)
    message = message_nodes(project(events).nodes)[0]
    assert (message["kind"], message["badge"], message["label"]) == ("telemetry", "telemetry", "probe")
    future = Event(len(events), events[-1].time, "memory/compacted", {"turn": 1})
    timeline = project(events)
    assert timeline.feed([future]) == [] and timeline.seq == len(events) + 1


async def test_patches_fed_event_by_event_rebuild_the_full_projection() -> None:
    script = [
        Response("calling", tool_calls=[ToolCall("lookup", {"key": "a"})], chunk_size=2),
        Response("partial", failure="SERVER"),
        Response("final answer", chunk_size=4),
        Response("second turn"),
    ]

    async def drive(agent: nbagent.Agent) -> None:
        agent.inject(UserMessage.text("ctx", source=_df_source()))
        agent.followup("one")
        agent.followup("two")

    events = await run_session(script, drive, retry=nbagent.RetryPolicy(base_delay_ms=1))
    full = project(events)
    for step in (1, 3, 7):
        timeline, nodes = Timeline(), {}
        for i in range(0, len(events), step):
            apply_patches(nodes, timeline.feed(events[i : i + step]))
        assert nodes == full.nodes
        assert timeline.seq == full.seq == len(events)


async def test_a_burst_of_chunks_becomes_one_text_patch() -> None:
    events = await run_session([Response("x" * 50, chunk_size=1)], followup("go"))
    chunks = [i for i, e in enumerate(events) if e.type == "assistant/chunk"]
    timeline = project(events[: chunks[0]])
    patches = timeline.feed(events[chunks[0] : chunks[-1] + 1])
    assert [p[0] for p in patches] == ["add", "text"]
    assert patches[1] == ["text", "answer-1-1", "text", "x" * 50]


async def test_events_already_folded_are_skipped() -> None:
    events = await run_session(["ok"], followup("go"))
    timeline = project(events)
    assert timeline.feed(events) == []


async def test_a_fold_that_starts_inside_a_turn_opens_it() -> None:
    events = await run_session(["ok"], followup("go"))
    first_step = next(i for i, e in enumerate(events) if e.type == "step/start")
    timeline = Timeline()
    timeline.feed(events[first_step:])
    turn = timeline.turn_nodes(1)
    assert [n["type"] for n in turn] == ["turn", "step", "message", "assistant"]
    assert turn[0]["outcome"] == "completed"
