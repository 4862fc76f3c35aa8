"""The timeline widget's "What if…" editor, kernel side (SPEC §11.4): the plan of a finished turn
grouped by "seen by step N", a replay from the page's edits (fork before the turn, replay, stream
the replayed turn, the diff), and bad input said in the page with nothing written."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_widgets_live import capture, say
from whatif_story import open_story

import nbagent
from nbagent.forks.editor_plan import editor_plan
from nbagent.widgets.whatif import edits

pytest.importorskip("anywidget")

from nbagent.widgets import TimelineWidget


async def _until(sent: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    for _ in range(2000):
        found = [m for m in sent if m.get("type") == kind]
        if found:
            return found[-1]
        if any(m.get("type") == "whatif-error" for m in sent):
            raise AssertionError([m for m in sent if m.get("type") == "whatif-error"])
        await asyncio.sleep(0.005)
    raise AssertionError(f"no {kind} in {[m.get('type') for m in sent]}")


async def test_the_plan_groups_a_finished_turns_arrivals_by_the_step_that_saw_them(tmp_path) -> None:
    agent = await open_story(tmp_path / "s.nbagent.sqlite")
    plan = editor_plan(agent.events, 1)
    assert [s["step"] for s in plan["steps"]] == [1, 2]
    rows = {a["label"]: a for a in plan["arrivals"]}
    assert (
        rows["customer"]["seen_by"] == 1 and rows["customer"]["pending"] and not rows["customer"]["movable"]
    )
    assert rows["currency note"]["seen_by"] == 2 and rows["currency note"]["movable"]
    assert (
        rows["currency note"]["preview"] == "prices are in EUR" and rows["currency note"]["source"] == "note"
    )
    with pytest.raises(ValueError, match=r"no finished turn 4 \(finished turns: 1\)"):
        editor_plan(agent.events, 4)
    await agent.close()


def test_the_pages_edits_become_pythons_delivered_during_step_k() -> None:
    drop, move, add = edits({"drop": ["a"], "move": {"b": 1}, "add": [{"text": "hi", "seen_by": 2}]})
    assert (drop, move, add) == (["a"], {"b": 0}, [("hi", 1)])
    for bad, words in (
        ({"move": {"b": 0}}, "number from 1"),
        ({"add": [{"text": " ", "seen_by": 1}]}, "needs its text"),
        ({"drop": "a"}, "list of message ids"),
    ):
        with pytest.raises(ValueError, match=words):
            edits(bad)


async def test_replay_from_the_page_forks_streams_the_turn_and_sends_the_diff(tmp_path) -> None:
    agent = await open_story(tmp_path / "s.nbagent.sqlite")
    widget = TimelineWidget(agent)
    sent = capture(widget)
    say(widget, {"type": "whatif-plan", "turn": 1})
    plan = (await _until(sent, "whatif-plan"))["plan"]
    note = next(a["id"] for a in plan["arrivals"] if a["label"] == "currency note")
    before = len(agent.events)
    say(widget, {"type": "whatif-replay", "key": "k1", "turn": 1, "drop": [note], "move": {}, "add": []})
    started = await _until(sent, "whatif-started")
    done = await _until(sent, "whatif-done")
    assert done["fork"] == started["fork"] != agent.session_id
    patches = [m for m in sent if m.get("type") == "whatif-patch" and m.get("key") == "k1"]
    assert patches and patches[0]["from"] == started["snapshot"]["seq"]  # the replayed turn, streamed
    diff = done["diff"]
    assert diff["steps"][-1]["changed"] is True  # without the note, dollars
    answers = [side["answer_text"] for side in diff["steps"][-1]["sides"]]
    assert answers == ["The total is 120 EUR.", "The total is 120 USD (I assumed dollars)."]
    assert len(agent.events) == before  # the parent is only read
    rows = {r.id: r for r in nbagent.list_sessions(tmp_path / "s.nbagent.sqlite")}
    assert rows[done["fork"]].parent == agent.session_id
    widget.close()
    await agent.close()


async def test_a_move_and_an_added_message_reach_the_replayed_turn(tmp_path) -> None:
    agent = await open_story(tmp_path / "s.nbagent.sqlite")
    widget = TimelineWidget(agent)
    sent = capture(widget)
    plan = editor_plan(agent.events, 1)
    note = next(a["id"] for a in plan["arrivals"] if a["label"] == "currency note")
    say(widget, {"type": "whatif-replay", "key": "k2", "turn": 1, "move": {note: 1},
                 "add": [{"text": "a new line", "seen_by": 2}]})  # fmt: skip
    done = await _until(sent, "whatif-done")
    step1_b = done["diff"]["steps"][0]["sides"][1]["rows"]
    assert any(r["id"] == note and r["mark"] == "moved" for r in step1_b)  # seen by step 1 now
    step2_b = done["diff"]["steps"][1]["sides"][1]["rows"]
    assert any(r["first_line"] == "a new line" and r["mark"] == "added" for r in step2_b)
    widget.close()
    await agent.close()


async def test_bad_edits_are_said_in_the_page_and_nothing_is_forked(tmp_path) -> None:
    agent = await open_story(tmp_path / "s.nbagent.sqlite")
    widget = TimelineWidget(agent)
    sent = capture(widget)
    for content, words in (
        ({"turn": 1, "drop": ["nope"]}, "not arrivals of turn 1: nope"),
        ({"turn": 7}, "no finished turn 7"),
        ({"turn": 1, "move": {"x": -1}}, "number from 1"),
    ):
        sent.clear()
        say(widget, {"type": "whatif-replay", "key": "bad", **content})
        assert sent and sent[-1]["type"] == "whatif-error" and words in sent[-1]["message"], sent
    assert len(nbagent.list_sessions(tmp_path / "s.nbagent.sqlite")) == 1
    widget.close()
    await agent.close()


async def test_the_tabs_comm_finds_the_kernel_holding_the_session_and_replays_there(tmp_path) -> None:
    from nbagent.notebook.kernel.whatif_comm import WhatIfComms

    agent = await open_story(tmp_path / "s.nbagent.sqlite")
    comms = WhatIfComms(lambda: agent)
    sent: list[dict[str, Any]] = []
    comms.answer({"request": "holds", "session": agent.session_id}, sent.append)
    comms.answer({"request": "holds", "session": "another"}, sent.append)
    assert [m["holds"] for m in sent] == [True, False]
    sent.clear()
    comms.answer({"request": "whatif-replay", "session": "another", "turn": 1, "key": "t"}, sent.append)
    assert sent[-1] == {"type": "whatif-error", "message": "this kernel no longer holds that session"}
    sent.clear()
    note = next(a["id"] for a in editor_plan(agent.events, 1)["arrivals"] if a["label"] == "currency note")
    comms.answer({"request": "whatif-replay", "session": agent.session_id, "turn": 1, "key": "t", "drop": [note]},
                 sent.append)  # fmt: skip
    done = await _until(sent, "whatif-done")
    assert done["diff"]["steps"][-1]["changed"] is True
    await agent.close()


async def test_which_context_mattered_shows_the_plan_then_ranked_bars(tmp_path) -> None:
    agent = await open_story(tmp_path / "s.nbagent.sqlite")
    widget = TimelineWidget(agent)
    sent = capture(widget)
    say(widget, {"type": "why-plan", "turn": 1})
    plan = await _until(sent, "why-plan")
    assert plan["runs"] == 4 and "Which context mattered in turn 1" in plan["text"]  # 3 items + control
    say(widget, {"type": "why-run", "turn": 1})
    done = (await _until(sent, "why-done"))["result"]
    labels = [i["label"].split(" ")[0] for i in done["items"]]
    assert labels[0] == "currency"  # without it, dollars: the answer moved most
    top = done["items"][0]
    assert top["score"] > 0 and not top["meaningless"] and "answer changed" in top["score_text"]
    assert all(i["meaningless"] for i in done["items"] if i["score"] == 0)  # at the noise: says nothing
    say(widget, {"type": "why-plan", "turn": 9})
    assert "9" in (await _until(sent, "why-error"))["message"]
    widget.close()
    await agent.close()
