"""The widget models without a browser: state, patches, remove messages, saved views, text reprs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import nbagent
from nbagent import UserMessage
from nbagent.models import Response, ScriptedModel
from nbagent.views import TIMELINE_MIME, apply_patches, inbox_html, inbox_model, timeline_html, timeline_json

pytest.importorskip("anywidget")

from nbagent.widgets import InboxWidget, TimelineWidget


def capture(widget: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    widget.send = lambda content, buffers=None: sent.append(content)
    return sent


def say(widget: Any, content: dict[str, Any]) -> None:
    """A message from the front end, as the comm delivers it."""
    widget._handle_custom_msg(content, [])


async def until(check: Any) -> None:
    """Yield to the loop until ``check()`` holds (the widgets coalesce on the agent's loop)."""
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not reached")


async def test_the_timeline_sends_only_patches_for_new_events_coalesced() -> None:
    agent = nbagent.open_session(None, model=ScriptedModel([Response("a" * 40, chunk_size=1)]))
    agent.inject("early context")
    widget = TimelineWidget(agent, delay=0.02)
    sent = capture(widget)
    first = widget.get_state()["snapshot"]
    assert first["seq"] == 1 and first["nodes"] == []
    agent.followup("go")
    await agent.when_idle()
    await until(lambda: sent and sent[-1]["to"] == len(agent.events))
    assert all(m["type"] == "patch" for m in sent)
    assert sent[0]["from"] == 1
    assert [m["from"] for m in sent[1:]] == [m["to"] for m in sent[:-1]]
    assert len(sent) < 10  # coalesced, not one message per event
    nodes = {n["id"]: n for n in first["nodes"]}
    for m in sent:
        apply_patches(nodes, m["ops"])
    assert nodes == {n["id"]: n for n in widget.current()["nodes"]}
    await agent.close()


async def test_a_view_says_hello_and_gets_live_and_a_reset_when_stale() -> None:
    agent = nbagent.open_session(None, model="echo")
    widget = TimelineWidget(agent)
    sent = capture(widget)
    say(widget, {"type": "hello", "seq": 0})
    assert sent == [{"type": "live"}]
    agent.inbox.remove(agent.inject("x").id)
    say(widget, {"type": "hello", "seq": 2})
    assert [m["type"] for m in sent[1:]] == ["patch", "live"]
    say(widget, {"type": "hello", "seq": 0})
    assert sent[-1]["type"] == "reset" and sent[-1]["snapshot"]["seq"] == 2
    await agent.close()


async def test_the_inbox_remove_message_cancels_the_pending_item() -> None:
    agent = nbagent.open_session(None, model="echo")
    keep = agent.inject(UserMessage.text("keep me", source={"kind": "cell", "label": "notes"}))
    drop = agent.inject("drop me")
    widget = InboxWidget(agent)
    sent = capture(widget)
    say(widget, {"type": "hello"})
    assert sent == [{"type": "live"}]  # the front end enables its remove buttons on this answer
    step = widget.queues["queues"][0]
    assert [m["first_line"] for m in step["items"]] == ["keep me", "drop me"]
    say(widget, {"type": "remove", "id": drop.id})
    assert [m["id"] for m in widget.queues["queues"][0]["items"]] == [keep.id]
    assert sent[-1] == {"type": "removed", "id": drop.id}
    last = agent.events[-1]
    assert (last.type, last.data["outcome"], last.data["removed_count"]) == (
        "agent/inbox/spliced",
        "canceled",
        1,
    )
    say(widget, {"type": "remove", "id": drop.id})
    assert "no longer pending" in widget.queues["error"]
    await agent.close()


async def test_the_inbox_follows_deliveries_and_status() -> None:
    agent = nbagent.open_session(None, model="echo")
    widget = InboxWidget(agent, delay=0.01)
    agent.inject(UserMessage.text("df", source={"kind": "dataframe", "name": "df", "shape": [2, 2]}))
    await until(lambda: widget.queues["pending"] == 1)
    item = widget.queues["queues"][0]["items"][0]
    assert (item["badge"], item["label"], item["size_text"]) == ("dataframe", "df · 2×2", "2 B")
    agent.followup("go")
    await agent.when_idle()
    await until(lambda: widget.queues["pending"] == 0 and widget.queues["status"] == "idle")
    assert widget.queues == inbox_model([], [], "idle")
    await agent.close()


async def test_every_output_carries_saved_views_next_to_the_live_one() -> None:
    agent = nbagent.open_session(None, model="echo")
    agent.inject(UserMessage.text("<script>alert(1)</script>", source={"kind": "cell"}))
    inbox, timeline = InboxWidget(agent), TimelineWidget(agent)
    data, _meta = inbox._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert 'data-kind="cell"' in data["text/html"] and "<script>" not in data["text/html"]
    assert data["text/plain"].startswith("Inbox · 1 pending · agent idle")
    agent.followup("hello")
    await agent.when_idle()
    data, _meta = timeline._repr_mimebundle_()
    html = data["text/html"].split("</style>")[1]
    assert html.index('data-kind="cell"') < html.index('data-kind="user"')
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert data[TIMELINE_MIME] == timeline_json(agent.events, max_text=2000, max_turns=20)
    assert data["text/plain"] == repr(timeline)
    await agent.close()


async def test_a_widget_has_a_text_form_for_a_plain_terminal() -> None:
    agent = nbagent.open_session(None, model=ScriptedModel([Response("ok", failure="AUTH")]))
    agent.inject(
        UserMessage.text("prices in EUR\nunits are boxes", source={"kind": "cell", "label": "units"})
    )
    inbox, timeline = InboxWidget(agent), TimelineWidget(agent)
    assert repr(inbox) == "\n".join(
        [
            "Inbox · 1 pending · agent idle",
            "  next-step: 1 message",
            "    [cell] units — prices in EUR (+1 line) · 29 B · ≈8 tokens",
            "  next-turn: empty",
        ]
    )
    agent.followup("go")
    await agent.when_idle()
    assert repr(timeline).splitlines()[1] == "  Turn 1 «go» · failed: AUTH: scripted AUTH failure · 1 step"
    await agent.close()


async def test_the_saved_timeline_keeps_recent_turns_whole_and_older_ones_as_heads() -> None:
    agent = nbagent.open_session(None, model="echo")
    for i in range(30):
        agent.followup(f"prompt {i} " + "word " * 200)
        await agent.when_idle()
    widget = TimelineWidget(agent)
    views = widget.saved_views()
    bundle = views[TIMELINE_MIME]
    assert bundle["omitted_turns"] == 10
    turns = [n for n in bundle["nodes"] if n["type"] == "turn"]
    assert len(turns) == 30 and all(t.get("omitted") for t in turns[:10])
    assert {n["parent"] for n in bundle["nodes"] if n["type"] == "step"} == {
        f"turn-{i}" for i in range(11, 31)
    }
    html = views["text/html"]
    assert "10 earlier turns show only their heads here" in html
    assert html.count('<details class="nba-turn"') == 30 and html.count("open>") == 3  # the last 3 opened
    one_more = len(html)
    agent.followup("one more " + "word " * 200)
    await agent.when_idle()
    grown = len(widget.saved_views()["text/html"]) - one_more
    assert grown < 1500  # a turn more costs its head, not a whole turn body
    await agent.close()


def test_empty_queues_are_one_compact_line_each() -> None:
    html = inbox_html(inbox_model([], [], "idle"))
    assert html.count('class="nba-queue nba-queue-empty"') == 2
    empty = timeline_html(timeline_json([]))
    assert "No turns yet." in empty
