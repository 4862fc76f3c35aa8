"""The timeline view model: a pure projection of real session logs, and its patches."""

from __future__ import annotations

import asyncio
from typing import Any

import nbagent
from nbagent import ToolResult, UserMessage
from nbagent.events import Event
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.widgets.timeline import Timeline, apply_patches, message_nodes, project


@nbagent.tool
def lookup(key: str) -> ToolResult:
    """Look something up, adding a plugin context for the next step."""
    context = UserMessage.text(f"note about {key}", source={"kind": "plugin", "plugin": "notes"})
    return ToolResult(f"value of {key}", additional_contexts=[context])


def run_session(script: list[Any], drive: Any, **options: Any) -> tuple[Event, ...]:
    """Open an in-memory session with a scripted model, run ``drive(agent)`` and return its log."""

    async def main() -> tuple[Event, ...]:
        agent = nbagent.open_session(None, model=ScriptedModel(script), tools=[lookup], **options)
        await drive(agent)
        await agent.when_idle()
        events = agent.events
        await agent.close()
        return events

    return asyncio.run(main())


async def inject_then_followup(agent: nbagent.Agent) -> None:
    agent.inject(UserMessage.text("<dataframe name='df'>\na,b\n</dataframe>", source=_df_source()))
    agent.followup("Summarise df")


def _df_source() -> dict[str, Any]:
    return {"kind": "dataframe", "name": "df", "library": "pandas", "shape": [3, 2], "form": "snapshot"}


def test_messages_appear_in_the_order_the_model_received_them_with_their_source_kind() -> None:
    events = run_session([Response("ok")], inject_then_followup)
    nodes = message_nodes(project(events).nodes)
    assert [(n["kind"], n["first_line"]) for n in nodes] == [
        ("dataframe", "a,b"),
        ("user", "Summarise df"),
    ]
    assert nodes[0]["label"] == "df 3×2"
    assert nodes[0]["text"] == "<dataframe name='df'>\na,b\n</dataframe>"
    assert nodes[0]["source"] == _df_source()


def test_a_turn_groups_its_steps_and_records_its_outcome_and_prompt() -> None:
    events = run_session([Response("ok")], inject_then_followup)
    nodes = project(events).nodes
    assert nodes["turn-1"] | {"start": 0, "end": 0} == {
        "id": "turn-1", "type": "turn", "parent": None, "seq": 2, "turn": 1, "status": "completed",
        "reason": {"kind": "completed"}, "start": 0, "end": 0, "steps": 1, "title": "Summarise df",
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
        "claimed 1 from next-step",
        "claimed 1 from next-turn",
    ]


def test_streamed_text_accumulates_and_the_final_message_settles_it() -> None:
    events = run_session([Response("hello world", chunk_size=3)], lambda a: _followup(a, "hi"))
    answer = project(events).nodes["answer-1-1"]
    assert (answer["text"], answer["streaming"], answer["failed"]) == ("hello world", False, False)


def test_tool_calls_carry_arguments_and_results_and_their_contexts_are_marked_as_via_the_tool() -> None:
    script = [Response(tool_calls=[ToolCall("lookup", {"key": "k1"})]), Response("done")]
    events = run_session(script, lambda a: _followup(a, "look it up"))
    nodes = project(events).nodes
    tool = next(n for n in nodes.values() if n["type"] == "tool")
    assert (tool["name"], tool["arguments"], tool["result"], tool["is_error"]) == (
        "lookup",
        '{"key": "k1"}',
        "value of k1",
        False,
    )
    context = message_nodes(nodes)[-1]
    assert (context["kind"], context["via_tool"], context["parent"]) == ("plugin", "lookup", "step-1-2")
    assert message_nodes(nodes)[0]["via_tool"] is None


def test_a_retry_is_a_mark_and_the_failed_attempt_is_kept_apart() -> None:
    script = [Response("partial", failure="RATE_LIMIT"), Response("recovered")]
    policy = nbagent.RetryPolicy(base_delay_ms=1, jitter=0)
    events = run_session(script, lambda a: _followup(a, "go"), retry=policy)
    nodes = project(events).nodes
    retry = next(n for n in nodes.values() if n["type"] == "mark" and n["mark"] == "retry")
    assert retry["text"] == "attempt 2 in 1 ms after RATE_LIMIT (scripted RATE_LIMIT failure)"
    answers = [n for n in nodes.values() if n["type"] == "assistant"]
    assert [(a["id"], a["text"], a["failed"]) for a in answers] == [
        ("answer-1-1", "partial", True),
        ("answer-1-1-a2", "recovered", False),
    ]


def test_a_removed_pending_message_is_a_discard_mark_outside_any_turn() -> None:
    async def drive(agent: nbagent.Agent) -> None:
        m = agent.inject("stale context")
        agent.inbox.remove(m.id)

    nodes = project(run_session([], drive)).nodes
    assert list(nodes.values()) == [
        {"id": "mark-1", "type": "mark", "parent": None, "seq": 1, "mark": "discard",
         "text": "canceled 1 pending in next-step", "target": "next-step"},
    ]  # fmt: skip


def test_unknown_source_kinds_are_kept_as_they_are() -> None:
    async def drive(agent: nbagent.Agent) -> None:
        agent.inject(UserMessage.text("hm", source={"kind": "telemetry", "label": "probe"}))
        agent.followup("go")

    message = message_nodes(project(run_session(["ok"], drive)).nodes)[0]
    assert (message["kind"], message["label"]) == ("telemetry", "probe")


def test_patches_fed_event_by_event_rebuild_the_full_projection() -> None:
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

    events = run_session(script, drive, retry=nbagent.RetryPolicy(base_delay_ms=1))
    full = project(events)
    for step in (1, 3, 7):
        timeline, nodes = Timeline(), {}
        for i in range(0, len(events), step):
            apply_patches(nodes, timeline.feed(events[i : i + step]))
        assert nodes == full.nodes
        assert timeline.seq == full.seq == len(events)


def test_a_burst_of_chunks_becomes_one_text_patch() -> None:
    events = run_session([Response("x" * 50, chunk_size=1)], lambda a: _followup(a, "go"))
    chunks = [i for i, e in enumerate(events) if e.type == "assistant/chunk"]
    timeline = project(events[: chunks[0]])
    patches = timeline.feed(events[chunks[0] : chunks[-1] + 1])
    assert [p[0] for p in patches] == ["add", "text"]
    assert patches[1] == ["text", "answer-1-1", "text", "x" * 50]


def test_events_already_folded_are_skipped() -> None:
    events = run_session(["ok"], lambda a: _followup(a, "go"))
    timeline = project(events)
    assert timeline.feed(events) == []


async def _followup(agent: nbagent.Agent, text: str) -> None:
    agent.followup(text)
