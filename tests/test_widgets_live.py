"""The widget models without a browser: state, patches, remove messages, static HTML."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import nbagent
from nbagent import UserMessage
from nbagent.models import Response, ScriptedModel
from nbagent.widgets import InboxWidget, TimelineWidget
from nbagent.widgets.snapshot import inbox_html, timeline_html
from nbagent.widgets.timeline import apply_patches

pytest.importorskip("anywidget")


def capture(widget: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    widget.send = lambda content, buffers=None: sent.append(content)
    return sent


def test_the_timeline_sends_only_patches_for_new_events_coalesced() -> None:
    async def main() -> None:
        agent = nbagent.open_session(None, model=ScriptedModel([Response("a" * 40, chunk_size=1)]))
        agent.inject("early context")
        widget = TimelineWidget(agent, delay=0.02)
        sent = capture(widget)
        first = widget.get_state()["snapshot"]
        assert first["seq"] == 1 and first["nodes"] == []
        agent.followup("go")
        await agent.when_idle()
        await asyncio.sleep(0.05)
        assert all(m["type"] == "patch" for m in sent)
        assert sent[0]["from"] == 1 and sent[-1]["to"] == len(agent.events)
        assert [m["from"] for m in sent[1:]] == [m["to"] for m in sent[:-1]]
        assert len(sent) < 10  # coalesced, not one message per event
        nodes = {n["id"]: n for n in first["nodes"]}
        for m in sent:
            apply_patches(nodes, m["ops"])
        assert nodes == {n["id"]: n for n in widget.current()["nodes"]}
        await agent.close()

    asyncio.run(main())


def test_a_view_with_a_stale_sequence_gets_a_reset() -> None:
    async def main() -> None:
        agent = nbagent.open_session(None, model="echo")
        widget = TimelineWidget(agent)
        sent = capture(widget)
        widget._on_msg(widget, {"type": "hello", "seq": 0}, [])
        assert sent == []
        agent.inbox.remove(agent.inject("x").id)
        widget._on_msg(widget, {"type": "hello", "seq": 2}, [])
        assert [m["type"] for m in sent] == ["patch"]
        widget._on_msg(widget, {"type": "hello", "seq": 0}, [])
        assert sent[-1]["type"] == "reset" and sent[-1]["snapshot"]["seq"] == 2
        await agent.close()

    asyncio.run(main())


def test_the_inbox_remove_message_cancels_the_pending_item() -> None:
    async def main() -> None:
        agent = nbagent.open_session(None, model="echo")
        keep = agent.inject(UserMessage.text("keep me", source={"kind": "cell", "label": "notes"}))
        drop = agent.inject("drop me")
        widget = InboxWidget(agent)
        assert [m["first_line"] for m in widget.queues["next_step"]] == ["keep me", "drop me"]
        widget._on_msg(widget, {"type": "remove", "id": drop.id}, [])
        assert [m["id"] for m in widget.queues["next_step"]] == [keep.id]
        last = agent.events[-1]
        assert (last.type, last.data["outcome"], last.data["removed_count"]) == (
            "agent/inbox/spliced",
            "canceled",
            1,
        )
        widget._on_msg(widget, {"type": "remove", "id": drop.id}, [])
        assert "no longer pending" in widget.queues["error"]
        await agent.close()

    asyncio.run(main())


def test_the_inbox_follows_deliveries_and_status() -> None:
    async def main() -> None:
        agent = nbagent.open_session(None, model="echo")
        widget = InboxWidget(agent, delay=0.01)
        agent.inject(UserMessage.text("df", source={"kind": "dataframe", "name": "df", "shape": [2, 2]}))
        await asyncio.sleep(0.03)
        assert [(m["kind"], m["label"]) for m in widget.queues["next_step"]] == [("dataframe", "df 2×2")]
        agent.followup("go")
        await agent.when_idle()
        await asyncio.sleep(0.03)
        assert widget.queues == {"status": "idle", "next_step": [], "next_turn": []}
        await agent.close()

    asyncio.run(main())


def test_every_output_carries_a_static_html_snapshot() -> None:
    async def main() -> None:
        agent = nbagent.open_session(None, model="echo")
        agent.inject(UserMessage.text("<script>alert(1)</script>", source={"kind": "cell"}))
        inbox, timeline = InboxWidget(agent), TimelineWidget(agent)
        data, _meta = inbox._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in data
        assert 'data-kind="cell"' in data["text/html"]
        assert "<script>" not in data["text/html"]
        agent.followup("hello")
        await agent.when_idle()
        data, _meta = timeline._repr_mimebundle_()
        html = data["text/html"].split("</style>")[1]
        assert "application/vnd.jupyter.widget-view+json" in data
        assert html.index('data-kind="cell"') < html.index('data-kind="user"')
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
        await agent.close()

    asyncio.run(main())


def test_static_html_shows_only_the_last_turns_of_a_long_session() -> None:
    nodes = [
        {"id": f"turn-{i}", "type": "turn", "parent": None, "seq": i, "turn": i, "status": "completed",
         "steps": 0, "title": f"prompt {i}"}
        for i in range(1, 61)
    ]  # fmt: skip
    html = timeline_html({"seq": 60, "nodes": nodes})
    assert "10 earlier turns are in the live widget" in html
    assert "prompt 11<" in html and "prompt 10<" not in html
    assert "empty" in inbox_html({"next_step": [], "next_turn": []})
