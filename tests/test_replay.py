"""What-if replays (SPEC §11.2): an unedited replay sends the parent's requests again, message for
message; each edit (drop, move, add) changes exactly what it names."""

from __future__ import annotations

from typing import Any

import pytest

import nbagent
from nbagent.forks.replay import Arrival
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


def _key(message: Any) -> tuple[Any, ...]:
    """What the model sees of a message; ids only for messages a replay re-delivers (a replayed
    answer or tool result is a new message with a new id)."""
    kept_id = message.role == "user" and message.kind != "tool"
    return (message.role, message.content, message.source, message.id if kept_id else None)


def _requests(model: ScriptedModel, turn: int) -> list[list[tuple[Any, ...]]]:
    return [[_key(m) for m in r.messages] for r in model.requests if r.turn == turn]


def _script() -> list[Any]:
    """The turn's answers without side effects (the fork's model)."""
    return [
        Response(tool_calls=[ToolCall("lookup", {"key": "a"}, id="c1")]),
        Response(tool_calls=[ToolCall("lookup", {"key": "b"}, id="c2")]),
        "done",
    ]


async def _parent(db) -> tuple[nbagent.Agent, ScriptedModel, dict[str, str]]:
    """Turn 2 has three steps: a steer arrives during step 1's request, a note during step 1's tool
    batch, and another steer during step 2's request."""
    ids: dict[str, str] = {}
    live: list[nbagent.Agent] = []

    def lookup(key: str) -> str:
        """Look a key up."""
        if live and key == "a":
            ids["note"] = live[0].inject(nbagent.UserMessage.text("a note", {"kind": "note"})).id
        return f"value of {key}"

    def steering(name: str, answer: Response) -> Any:
        def respond(request: Any) -> Response:
            ids[name] = live[0].steer(name).id
            return answer

        return respond

    first, second, third = _script()
    model = ScriptedModel(["hello there", steering("s1", first), steering("s2", second), third])
    agent = nbagent.open_session(db, model=model, tools=[lookup])
    live.append(agent)
    await agent.run("hello")
    agent.inject(nbagent.UserMessage.text("context before turn two", {"kind": "note"}))
    await agent.run("turn two")
    live.clear()
    return agent, model, ids


async def test_an_unedited_replay_sends_the_parents_requests_message_for_message(db) -> None:
    parent, model, ids = await _parent(db)
    child_model = ScriptedModel(_script())
    child = parent.fork(before_turn=2, model=child_model)
    try:
        assert child.replay_plan(turn=2) == (
            Arrival(ids["s1"], "steer", 1),
            Arrival(ids["note"], "inject", 1),
            Arrival(ids["s2"], "steer", 2),
        )
        run = await child.replay(turn=2)
        assert run.turns == (2,) and run.outcome == "completed" and run.text == "done"
        parent_requests = _requests(model, 2)
        assert len(parent_requests) == 3
        assert _requests(child_model, 2) == parent_requests
        check_invariants(child.events)
    finally:
        await child.close()
        await parent.close()


async def test_each_edit_changes_exactly_what_it_names(db) -> None:
    parent, model, ids = await _parent(db)
    before = _requests(model, 2)
    children = []
    try:
        dropped_model = ScriptedModel(_script())
        children.append(parent.fork(before_turn=2, model=dropped_model))
        await children[-1].replay(turn=2, drop=[ids["note"]])
        without_note = [[k for k in r if k[3] != ids["note"]] for r in before]
        assert without_note != before and _requests(dropped_model, 2) == without_note

        moved_model = ScriptedModel(_script())
        children.append(parent.fork(before_turn=2, model=moved_model))
        assert children[-1].replay_plan(turn=2)[-1] == Arrival(ids["s2"], "steer", 2)
        await children[-1].replay(turn=2, move={ids["s2"]: 1})
        step1, step2, step3 = _requests(moved_model, 2)
        s2 = next(k for k in before[2] if k[3] == ids["s2"])
        assert step1 == before[0]
        assert step2 == [*before[1], s2]  # claimed one step earlier, after the step-1 arrivals
        assert [k for k in step3 if k[3] != ids["s2"]] == [k for k in before[2] if k[3] != ids["s2"]]
        assert step3.index(s2) == len(before[1])

        added_model = ScriptedModel(_script())
        children.append(parent.fork(before_turn=2, model=added_model))
        extra = nbagent.UserMessage.text("a DataFrame snapshot", {"kind": "note"})
        await children[-1].replay(turn=2, add=[(extra, 0)])
        after = _requests(added_model, 2)
        assert [[k for k in r if k[3] != extra.id] for r in after] == before
        assert all(sum(k[3] == extra.id for k in r) == 1 for r in after)

        with pytest.raises(ValueError, match="not arrivals of this turn: nope"):
            await children[-1].replay(turn=2, drop=["nope"])
    finally:
        for child in children:
            await child.close()
        await parent.close()


async def test_an_arrival_says_when_and_what_in_words(db) -> None:
    parent, _, ids = await _parent(db)
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        s1, note, s2 = child.replay_plan(turn=2)
        assert (s1.seen_by, note.seen_by, s2.seen_by) == (2, 2, 3)
        assert (note.label, note.source, note.preview) == ("note", "note", "a note")
        assert (s1.label, s1.source, s1.preview) == ("steer", "user", "s1")
        assert repr(note) == f"<Arrival inject note 'a note' seen by step 2 id={ids['note']}>"
    finally:
        await child.close()
        await parent.close()


async def test_the_edit_is_recorded_in_the_commit_of_turn_start_and_drop_removes_pending_context(
    db,
) -> None:
    from test_commits_per_step import CommitLog

    parent, _, ids = await _parent(db)
    pending_note = next(
        e.data["inserted"][0]["id"]
        for e in parent.events
        if e.type == "agent/inbox/spliced"
        and e.data["inserted"]
        and e.data["inserted"][0]["content"][0].get("text") == "context before turn two"
    )
    child_model = ScriptedModel(_script())
    child = parent.fork(before_turn=2, model=child_model)
    try:
        log = CommitLog(child)
        extra = nbagent.UserMessage.text("a snapshot", {"kind": "dataframe"})
        await child.replay(turn=2, drop=[pending_note, ids["s1"]], move={ids["s2"]: 0}, add=[(extra, 0)])
        first = log.take()[0]
        assert first[:4] == ["agent/inbox/spliced", "agent/inbox/spliced", "agent/inbox/spliced",
                             "session/replayed"]  # fmt: skip
        assert first[4] == "turn/start"
        replayed = next(e for e in child.events if e.type == "session/replayed")
        assert replayed.data == {
            "turn": 2,
            "parent_turn": 2,
            "drop": [pending_note, ids["s1"]],
            "move": {ids["s2"]: 0},
            "add": [{"id": extra.id, "step": 0}],
            "labels": {pending_note: "note", ids["s1"]: "steer", ids["s2"]: "steer", extra.id: "dataframe"},
        }
        assert next(e for e in child.events if e.seq == replayed.seq + 1).type == "turn/start"
        first_request = [m.id for m in child_model.requests[0].messages]
        assert pending_note not in first_request and ids["s1"] not in first_request
        assert ids["s2"] in first_request and extra.id in first_request
        check_invariants(child.events)
    finally:
        await child.close()
        await parent.close()


async def test_an_arrival_moved_past_the_last_step_is_pending_afterwards_and_listed_late(db) -> None:
    parent, _, ids = await _parent(db)
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        run = await child.replay(turn=2, move={ids["note"]: 7})
        assert run.late == (ids["note"],) and run.outcome == "completed"
        assert [m.id for m in child.inbox.next_step] == [ids["note"]]
        assert child.status == "idle" and run.turns == (2,)  # appended without waking
    finally:
        await child.close()
        await parent.close()


async def test_bad_edits_raise_before_anything_is_written(db) -> None:
    parent, _, ids = await _parent(db)
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        count = len(child.events)
        with pytest.raises(ValueError, match="not arrivals of this turn: nope"):
            await child.replay(turn=2, move={"nope": 1})
        with pytest.raises(ValueError, match="not arrivals of this turn: gone"):
            await child.replay(turn=2, drop=["gone"])
        with pytest.raises(ValueError, match="a replay step is a number >= 0"):
            await child.replay(turn=2, move={ids["s1"]: -1})
        with pytest.raises(ValueError, match="a replay step is a number >= 0"):
            await child.replay(turn=2, add=[("extra", -2)])
        assert len(child.events) == count and child.status == "idle"
    finally:
        await child.close()
        await parent.close()


async def test_every_view_shows_the_edit_on_the_replayed_turn(tmp_path) -> None:
    from nbagent.views import Timeline, timeline_html, timeline_text, transcript_markdown

    parent, _, ids = await _parent(tmp_path / "s.nbagent.sqlite")
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        await child.replay(turn=2, move={ids["note"]: 0}, drop=[ids["s2"]])
        timeline = Timeline()
        timeline.feed(child.events)
        bundle = timeline.to_json(max_text=None)
        line = "replay of turn 2: note seen by step 1, steer dropped"
        (node,) = [n for n in bundle["nodes"] if n["type"] == "replayed"]
        assert node["text"] == line and node["parent"] == "turn-2" and node["parent_turn"] == 2
        assert next(n for n in bundle["nodes"] if n["id"] == "turn-2")["replay_text"] == line
        assert line in timeline_text(bundle) and line in transcript_markdown(bundle)
        assert f'data-mark="replayed">{line}</div>' in timeline_html(bundle)
    finally:
        await child.close()
        await parent.close()


def test_an_unnamed_fork_is_listed_by_its_last_replay(tmp_path) -> None:
    from fork_story import write_fork

    from nbagent.labserver.sessions import file_sessions

    path = tmp_path / "w.nbagent.sqlite"
    parent, fork = write_fork(path)
    rows = {r["id"]: r for r in file_sessions(path, "w.nbagent.sqlite")}
    assert rows[fork]["label"] == "replay of turn 1: note seen by step 2"
    assert rows[fork]["replay_text"] == "replay of turn 1: note seen by step 2"
    assert rows[fork]["purpose"] is None and rows[parent]["replay_text"] is None
    assert rows[parent]["label"] == "What is the invoice total?"


async def test_a_fork_of_a_fork_replays_its_own_parents_turn(db) -> None:
    parent, _, ids = await _parent(db)
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        await child.replay(turn=2, move={ids["s2"]: 1})
        grandchild = child.fork(before_turn=2, model=ScriptedModel(_script()))
        try:  # the child's turn, where s2 came during step 1, not the grandparent's (step 2)
            assert [(a.message_id, a.step) for a in grandchild.replay_plan(turn=2)][-1] == (ids["s2"], 1)
        finally:
            await grandchild.close()
    finally:
        await child.close()
        await parent.close()
