"""Forks (SPEC §11.1): a child session begins with a copy of the parent's prefix and one
``session/forked``; the parent is never written; ``inbox.move`` and ``agent.wake``."""

from __future__ import annotations

from pathlib import Path

import pytest
from filestate import snapshot

import nbagent
from nbagent.log.events import block_text
from nbagent.models import ScriptedModel
from nbagent.store.copying import copy_sessions
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


async def _two_turns(db) -> nbagent.Agent:
    agent = nbagent.open_session(db, model=ScriptedModel(["first answer", "second answer"]))
    agent.followup("one")
    await agent.when_idle()
    agent.inject("a note for turn two")
    agent.followup("two")
    await agent.when_idle()
    return agent


async def test_fork_before_a_turn_copies_the_prefix_and_starts_from_its_inbox(db) -> None:
    parent = await _two_turns(db)
    events = parent.events
    start2 = next(e.seq for e in events if e.type == "turn/start" and e.data["turn"] == 2)
    child = parent.fork(before_turn=2, model=ScriptedModel(["replayed"]))
    try:
        own = child.events
        assert own[:start2] == events[:start2]
        forked = own[start2]
        assert (forked.seq, forked.type) == (start2, "session/forked")
        assert forked.data == {"parent": parent.session_id, "at": start2 - 1, "turn": 2}
        assert len(own) == start2 + 1 and child.status == "idle"
        assert [block_text(m.content) for m in child.inbox.next_turn] == ["two"]
        assert [block_text(m.content) for m in child.inbox.next_step] == ["a note for turn two"]
        rows = {r.id: r for r in nbagent.list_sessions(db)}
        assert rows[child.session_id].parent == parent.session_id
        assert rows[parent.session_id].parent is None
        assert parent.events == events  # the parent gained nothing
        assert child.wake() is True
        await child.when_idle()
        check_invariants(child.events)
        assert child.events[-1].data["turn"] == 2 and child.events[-1].type == "turn/end"
    finally:
        await child.close()
        await parent.close()


async def test_a_fork_at_a_seq_inside_a_turn_names_the_nearest_quiet_points(db) -> None:
    parent = await _two_turns(db)
    events = parent.events
    start2 = next(e.seq for e in events if e.type == "turn/start" and e.data["turn"] == 2)
    end2 = next(e.seq for e in events if e.type == "turn/end" and e.data["turn"] == 2)
    try:
        with pytest.raises(ValueError, match=rf"inside turn 2.* {start2 - 1} \(before the turn\) and {end2}"):
            parent.fork(at=start2 + 1)
        with pytest.raises(ValueError, match="no turn 7"):
            parent.fork(before_turn=7)
        with pytest.raises(ValueError, match="exactly one"):
            parent.fork()
        child = parent.fork(at=end2)
        assert child.events[-1].data == {"parent": parent.session_id, "at": end2}
        assert child.events[:-1] == events[: end2 + 1]
        assert [s.id for s in nbagent.list_sessions(db)].count(child.session_id) == 1
        await child.close()
    finally:
        await parent.close()


@pytest.mark.sqlite_only
async def test_a_fork_into_another_file_leaves_the_parent_byte_identical(tmp_path: Path) -> None:
    src = tmp_path / "parent.nbagent.sqlite"
    parent = await _two_turns(src)
    sid = parent.session_id
    await parent.close()
    before = snapshot(src)
    dest = tmp_path / "elsewhere.nbagent.sqlite"
    child = nbagent.fork_session(src, sid, before_turn=2, to=dest, new_session_id="child-1")
    await child.close()
    assert snapshot(src) == before
    assert [r.parent for r in nbagent.list_sessions(dest)] == [sid]
    copied = copy_sessions(dest, tmp_path / "copy.nbagent.sqlite")
    assert [c.outcome for c in copied] == ["copied"]
    assert [r.parent for r in nbagent.list_sessions(tmp_path / "copy.nbagent.sqlite")] == [sid]
    events = nbagent.read_events(dest, "child-1")
    assert events[-1].type == "session/forked" and events[-1].data["turn"] == 2


async def test_inbox_move_is_one_commit_of_two_splices_and_does_not_wake(db) -> None:
    agent = nbagent.open_session(db, model=ScriptedModel(["ok"]))
    try:
        a = agent.inject("a")
        b = agent.inbox.append("next-turn", "b")
        count = len(agent.events)
        assert agent.inbox.move(a.id, "next-turn", 0) is True
        assert agent.status == "idle"
        assert [m.id for m in agent.inbox.next_turn] == [a.id, b.id] and agent.inbox.next_step == ()
        removal, insertion = agent.events[count:]
        assert removal.data == {"target": "next-step", "start": 0, "inserted": [], "removed_count": 1,
                                "outcome": "moved"}  # fmt: skip
        assert insertion.data["target"] == "next-turn" and insertion.data["start"] == 0
        assert [m["id"] for m in insertion.data["inserted"]] == [a.id]
        assert agent.inbox.move("nope", "next-step", 0) is False
        assert len(agent.events) == count + 2
        assert agent.wake() is True
        await agent.when_idle()
        assert agent.wake() is False  # nothing pending
    finally:
        await agent.close()


@pytest.mark.sqlite_only
async def test_a_fork_into_postgres_from_a_file(tmp_path: Path, pg_url: str) -> None:
    src = tmp_path / "parent.nbagent.sqlite"
    parent = await _two_turns(src)
    sid, events = parent.session_id, parent.events
    await parent.close()
    before = snapshot(src)
    child = nbagent.fork_session(src, sid, before_turn=2, to=pg_url, new_session_id="into-pg")
    try:
        start2 = next(e.seq for e in events if e.type == "turn/start" and e.data["turn"] == 2)
        assert child.events[:-1] == events[:start2]
        assert child.events[-1].data == {"parent": sid, "at": start2 - 1, "turn": 2}
    finally:
        await child.close()
    assert snapshot(src) == before
    assert [r.parent for r in nbagent.list_sessions(pg_url)] == [sid]


async def test_an_in_memory_session_cannot_be_forked() -> None:
    agent = nbagent.open_session(None)
    try:
        with pytest.raises(nbagent.NbagentError, match="in-memory session"):
            agent.fork(before_turn=1)
    finally:
        await agent.close()


async def test_the_timeline_of_a_fork_says_where_it_came_from_and_shows_a_move(db) -> None:
    from nbagent.views import Timeline, transcript_markdown

    parent = await _two_turns(db)
    child = parent.fork(before_turn=2)
    try:
        assert child.inbox.move(child.inbox.next_turn[0].id, "next-step", 0)
        timeline = Timeline()
        timeline.feed(child.events)
        (node,) = [n for n in timeline.nodes.values() if n["type"] == "forked"]
        assert node["parent_session"] == parent.session_id and node["turn"] == 2
        text = transcript_markdown(timeline.to_json(max_text=None))
        assert f"forked from {parent.session_id} before turn 2" in text
        assert "Moved out of next-turn" in text
    finally:
        await child.close()
        await parent.close()
