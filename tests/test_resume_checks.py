"""The checks a resumed SQLite session owes before its first write (SPEC §6.3, issue #19 items 8
and 12): the inbox replay of every splice and ``PRAGMA quick_check`` run when the store is first
asked to write, whatever the write is, and a damaged log refuses it and every later one, leaving
the file, its -wal and its -shm byte-identical. A resume that only reads pays nothing for them."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from filestate import crashed_copy, snapshot

import nbagent
from nbagent.models import ScriptedModel


def _session_with_an_impossible_splice(path: Path) -> int:
    """A closed session whose second splice removes 9 messages from a queue of one; its seq."""

    async def main() -> str:
        agent = nbagent.open_session(path, model=ScriptedModel(["one", "two"]))
        await agent.run("first")
        await agent.run("second")
        await agent.close()
        return agent.session_id

    sid = asyncio.run(main())
    seq = [e.seq for e in nbagent.read_events(path, sid) if e.type == "agent/inbox/spliced"][1]
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET data = json_set(data, '$.removed_count', 9) WHERE seq = ?", (seq,))
    conn.commit()
    conn.close()
    return seq


def test_every_kind_of_first_write_after_resume_is_refused_on_a_damaged_log(tmp_path: Path) -> None:
    path = tmp_path / "s.nbagent.sqlite"
    seq = _session_with_an_impossible_splice(path)
    before = snapshot(path)
    refusals: list[nbagent.SessionCorruptError] = []

    async def main() -> None:
        agent = nbagent.resume_session(path)
        try:
            assert agent.session_id  # resume only read: nothing refused yet
            for write in (
                lambda: agent.set_model(ScriptedModel(["x"])),
                lambda: agent.inject("context"),
                lambda: agent.inject("context again"),
            ):
                with pytest.raises(nbagent.SessionCorruptError) as caught:
                    write()
                refusals.append(caught.value)
        finally:
            await agent.close()

    asyncio.run(main())
    assert len(refusals) == 3
    for error in refusals:
        assert isinstance(error, nbagent.SessionWriteError)  # what a failed write raises, too
        assert str(path) in str(error) and f"splice at seq {seq} is impossible" in str(error)
        assert "nothing was recorded" in str(error)
    assert snapshot(path) == before


def test_a_sound_log_takes_writes_after_resume(tmp_path: Path) -> None:
    path = tmp_path / "s.nbagent.sqlite"

    async def main() -> str:
        agent = nbagent.open_session(path, model=ScriptedModel(["one"]))
        await agent.run("first")
        await agent.close()
        resumed = nbagent.resume_session(path, agent.session_id, model=ScriptedModel(["two"]))
        resumed.inject("context")
        await resumed.run("second")
        await resumed.close()
        return agent.session_id

    sid = asyncio.run(main())
    texts = [
        e.data["inserted"][0]["content"][0]["text"]
        for e in nbagent.read_events(path, sid)
        if e.type == "agent/inbox/spliced" and e.data.get("inserted")
    ]
    assert texts == ["first", "context", "second"]


def test_a_damaged_log_a_crashed_writer_left_with_its_wal_is_refused_at_resume_untouched(
    tmp_path: Path,
) -> None:
    """A writer opening a log left in a -wal rebuilds its -shm, so on such a log the checks run at
    resume, before a writer opens it (deferred to the first write, the -shm used to change)."""
    path = tmp_path / "s.nbagent.sqlite"
    damage = (
        "UPDATE events SET data = json_set(data, '$.removed_count', 9) WHERE seq = (SELECT seq "
        "FROM events WHERE type = 'agent/inbox/spliced' AND data ->> 'removed_count' = 1 ORDER BY seq LIMIT 1)"
    )
    crashed_copy(path, tmp_path / "scratch", statements=(damage,))
    before = snapshot(path)
    assert before["-wal"] is not None and before["-shm"] is not None

    async def main() -> None:
        with pytest.raises(nbagent.SessionCorruptError, match="is impossible") as caught:
            nbagent.resume_session(path)
        assert str(path) in str(caught.value)

    asyncio.run(main())
    assert snapshot(path) == before
