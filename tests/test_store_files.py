"""Odd files and odd arguments at the store's door (SPEC §6.1, §6.3): special files, leftover
write-ahead logs, newer schemas hidden in a ``-wal``, damage the cheap checks must see at resume.
Every refusal leaves the file, its ``-wal`` and its ``-shm`` byte-identical."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filestate import crashed_copy, snapshot

import nbagent
from nbagent.models import ScriptedModel

ENTRY_POINTS = """
import asyncio, json, sys, nbagent
path = sys.argv[1]
async def main():
    out = {}
    for name, call in [
        ("open_session", lambda: nbagent.open_session(path)),
        ("resume_session", lambda: nbagent.resume_session(path)),
        ("list_sessions", lambda: nbagent.list_sessions(path)),
        ("read_events", lambda: nbagent.read_events(path, "x")),
    ]:
        try:
            result = call()
        except Exception as exc:
            out[name] = [type(exc).__name__, str(exc)]
        else:
            if hasattr(result, "close"):
                await result.close()
            out[name] = ["ok", ""]
    print(json.dumps(out))
asyncio.run(main())
"""


def entry_points_in_a_child(path: Path) -> dict[str, list[str]]:
    """Each entry point's outcome on ``path``, run in a child (a hang fails, it cannot stall the suite)."""
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_POINTS, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_fifo_at_the_session_path_is_refused_without_blocking(tmp_path: Path) -> None:
    """Each entry point used to block forever in open(2) on the FIFO."""
    fifo = tmp_path / "s.nbagent.sqlite"
    os.mkfifo(fifo)
    try:
        outcomes = entry_points_in_a_child(fifo)
    except subprocess.TimeoutExpired:
        pytest.fail("an entry point blocked on the FIFO")
    for name, (kind, message) in outcomes.items():
        assert kind == "SessionFileError", (name, kind, message)
        assert str(fifo) in message and "FIFO" in message, (name, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.nbagent.sqlite"]


def test_an_empty_session_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.nbagent.sqlite"

    async def main() -> None:
        for bad in ("", "   "):
            with pytest.raises(ValueError, match="session_id must be a non-empty str"):
                nbagent.open_session(path, session_id=bad, model=ScriptedModel([]))

    asyncio.run(main())
    assert nbagent.list_sessions(path) == []
    assert not path.exists()
    assert snapshot(path) == {"main": None, "-wal": None, "-shm": None}


def test_reading_a_log_whose_writer_crashed_creates_no_shm(tmp_path: Path) -> None:
    """list_sessions and read_events used to create -shm beside a leftover -wal."""
    path = crashed_copy(tmp_path / "s.nbagent.sqlite", tmp_path / "live")
    os.unlink(f"{path}-shm")
    before = snapshot(path)
    assert before["-wal"] is not None
    rows = nbagent.list_sessions(path)
    assert len(rows) == 1 and rows[0].turns == 2
    events = nbagent.read_events(path, rows[0].id)
    assert len(events) == rows[0].events and events[-1].type == "turn/end"  # the -wal's frames are read
    assert snapshot(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live", "s.nbagent.sqlite", "s.nbagent.sqlite-wal"]


def test_a_newer_schema_version_inside_a_leftover_wal_is_refused_unchanged(tmp_path: Path) -> None:
    """The header says version 1 but the -wal's first page says 2: open_session added a session,
    resume_session appended, list_sessions rewrote -shm."""
    path = crashed_copy(
        tmp_path / "s.nbagent.sqlite", tmp_path / "live", statements=("PRAGMA user_version = 2",)
    )
    assert path.read_bytes()[60:64] == (1).to_bytes(4, "big")  # only the -wal knows
    before = snapshot(path)
    outcomes = entry_points_in_a_child(path)
    for name, (kind, message) in outcomes.items():
        assert kind == "SessionFileError", (name, kind, message)
        assert "newer" in message and str(path) in message, (name, message)
    assert snapshot(path) == before


def test_a_file_with_nbagents_ids_but_another_schema_is_refused_unchanged(tmp_path: Path) -> None:
    """A computed ``events.data`` column (every read evaluates it) used to be read as nbagent's."""
    import sqlite3

    from nbagent.store.sqlite.schema import SCHEMA

    path = tmp_path / "crafted.nbagent.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA application_id = 1851941223")
    conn.execute("PRAGMA user_version = 1")
    crafted = SCHEMA.replace(
        "data TEXT NOT NULL,", "data TEXT GENERATED ALWAYS AS (printf('%.*c', 1000000, 'x')) VIRTUAL,"
    )
    conn.executescript(crafted)
    conn.execute("INSERT INTO sessions (id, created_at) VALUES ('s', 0)")
    conn.execute("INSERT INTO events (session_id, seq, time, type) VALUES ('s', 0, 0, 'turn/start')")
    conn.close()
    before = snapshot(path)
    outcomes = entry_points_in_a_child(path)
    for name, (kind, message) in outcomes.items():
        assert kind == "SessionCorruptError", (name, kind, message)
        assert "schema is not nbagent's" in message and "table events is not nbagent's" in message, message
    assert snapshot(path) == before


def test_a_read_only_file_with_a_leftover_wal_is_not_written_by_resume_or_list(public_dir: Path) -> None:
    """Resume's read-only check and list_sessions used to rewrite the -shm of a 0444 file."""
    from filestate import run_unprivileged

    path = crashed_copy(public_dir / "s.nbagent.sqlite", public_dir / "live")
    if os.geteuid() == 0:  # the child runs as nobody: the files are its own, as a user's are
        for suffix in ("", "-wal", "-shm"):
            os.chown(f"{path}{suffix}", 65534, 65534)
    os.chmod(path, 0o444)
    before = snapshot(path)
    assert before["-wal"] is not None and before["-shm"] is not None
    done = run_unprivileged(
        "async def main():\n"
        "    try:\n"
        "        nbagent.resume_session(P)\n"
        "    except nbagent.SessionFileError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
        "    print(len(nbagent.list_sessions(P)))\n"
        f"P = {str(path)!r}\n"
        "asyncio.run(main())\n"
    )
    assert done.returncode == 0, done.stderr
    refused, listed = done.stdout.splitlines()
    assert refused.startswith("SessionFileError") and "read-only" in refused and str(path) in refused
    assert listed == "1"
    assert snapshot(path) == before


def test_a_tool_value_nested_5000_levels_deep_is_an_invalid_result_for_the_model(tmp_path: Path) -> None:
    """The turn used to end ``error`` with a RecursionError; the model now reads INVALID_RESULT."""
    from nbagent.models import Response, ToolCall

    @nbagent.tool
    def deep() -> list:
        """A value nested far too deeply."""
        value: list = []
        for _ in range(5000):
            value = [value]
        return value

    async def main() -> None:
        model = ScriptedModel([Response(tool_calls=[ToolCall("deep", {}, id="c1")]), "understood"])
        agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model, tools=[deep])
        result = await agent.run("go")
        assert result.end["reason"]["kind"] == "completed"
        (tool_result,) = [e.data for e in agent.events if e.type == "tool/result"]
        assert tool_result["error"]["code"] == "INVALID_RESULT"
        text = tool_result["message"]["content"][0]["content"][0]["text"]
        assert "nests deeper than 200 levels" in text
        await agent.close()

    asyncio.run(main())


def _closed_session(path: Path, prompts: int = 6) -> str:
    async def main() -> str:
        agent = nbagent.open_session(path, model=ScriptedModel([f"answer {i}" for i in range(prompts)]))
        for i in range(prompts):
            await agent.run(f"prompt {i} " + "x" * 2000)
            agent.inject(f"context {i} " + "y" * 2000)
        await agent.close()
        return agent.session_id

    return asyncio.run(main())


def _resume_then_inject(path: Path) -> None:
    async def main() -> None:
        agent = nbagent.resume_session(path)
        try:
            agent.inject("context is a write too")
        finally:
            await agent.close()

    asyncio.run(main())


def test_an_impossible_splice_is_refused_at_resume_before_any_write(tmp_path: Path) -> None:
    """Resume used to succeed and the next inject() was appended to the damaged log."""
    import sqlite3

    path = tmp_path / "s.nbagent.sqlite"
    sid = _closed_session(path)
    splices = [e.seq for e in nbagent.read_events(path, sid) if e.type == "agent/inbox/spliced"]
    seq = splices[1]  # a claim, well before the last turn/end
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET data = json_set(data, '$.removed_count', 9) WHERE seq = ?", (seq,))
    conn.commit()
    conn.close()
    before = snapshot(path)
    with pytest.raises(nbagent.SessionCorruptError, match=f"splice at seq {seq} is impossible") as caught:
        _resume_then_inject(path)
    assert str(path) in str(caught.value)
    assert snapshot(path) == before


def test_a_corrupt_middle_page_is_refused_at_resume_before_any_write(tmp_path: Path) -> None:
    """Resume used to succeed on a file with a damaged page (its cheap checks read indexes only)."""
    path = tmp_path / "s.nbagent.sqlite"
    sid = _closed_session(path)
    page = 4096
    events_root = _table_pages(path)
    with open(path, "r+b") as f:  # a leaf page of the events table, in the middle of the file
        f.seek(page * (events_root[len(events_root) // 2] - 1))
        f.write(b"\xff" * page)
    before = snapshot(path)
    with pytest.raises(nbagent.SessionCorruptError, match="is damaged") as caught:
        _resume_then_inject(path)
    assert str(path) in str(caught.value)
    assert snapshot(path) == before
    assert sid


def _table_pages(path: Path) -> list[int]:
    """The page numbers of the events table's b-tree leaves (dbstat)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno"
            )
        ]
    finally:
        conn.close()


@pytest.mark.parametrize("free", [4096, 16384, 65536])
def test_creating_a_file_on_a_nearly_full_disk_says_the_disk_is_full(small_disk, free: int) -> None:
    """With a few kB free, SQLite's failures used to read "disk I/O error; check the path and its
    permissions" or "cannot rollback - no transaction is active". (A real 2 MB tmpfs.)"""
    small_disk.fill(leave=free)
    target = small_disk.path / "new.nbagent.sqlite"

    async def main() -> None:
        with pytest.raises(nbagent.SessionWriteError) as caught:
            nbagent.open_session(target, model=ScriptedModel([]))
        message = str(caught.value)
        assert "the disk is full" in message and str(target) in message, message
        assert "I/O error" not in message and "rollback" not in message

    asyncio.run(main())
    assert sorted(p.name for p in small_disk.path.iterdir()) == ["filler"]


def test_deliveries_that_meet_a_full_disk_name_the_path_and_the_cause(small_disk) -> None:
    """Deliveries staged while the turn's write met a full disk used to fail with "the session
    stopped before this was written" alone, naming neither the file nor the cause."""
    import sqlite3
    import threading
    import time

    from nbagent.models import Response, ToolCall

    db = small_disk.path / "s.nbagent.sqlite"
    outcomes: list[BaseException | None] = []

    async def main() -> None:
        started, gate = asyncio.Event(), asyncio.Event()

        @nbagent.tool
        async def slow() -> str:
            """Answers when the gate opens."""
            started.set()
            await gate.wait()
            return "slow result"

        model = ScriptedModel([Response(tool_calls=[ToolCall("slow", {}, id="a")]), "done"])
        agent = nbagent.open_session(db, model=model, tools=[slow])
        journal = agent.driver.journal
        agent.followup("go")
        await started.wait()
        foreign = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        foreign.execute("BEGIN IMMEDIATE")  # the turn's next write waits for this lock

        def deliver(i: int) -> None:
            try:
                agent.inject(f"context {i}")
            except Exception as exc:  # collected and asserted on below
                outcomes.append(exc)
            else:
                outcomes.append(None)

        def control() -> None:
            """Runs beside the loop thread, which the turn's write holds in SQLite's busy wait."""
            deadline = time.monotonic() + 60
            while not journal._writing:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            workers = [threading.Thread(target=deliver, args=(i,)) for i in range(3)]
            for worker in workers:
                worker.start()
            while len(journal._staged) < len(workers):  # staged behind the blocked write
                assert time.monotonic() < deadline
                time.sleep(0.005)
            small_disk.fill()
            foreign.execute("ROLLBACK")
            for worker in workers:
                worker.join(60)

        controller = asyncio.get_running_loop().run_in_executor(None, control)
        gate.set()
        await controller
        foreign.close()
        small_disk.free()
        await agent.close()

    asyncio.run(main())
    assert len(outcomes) == 3
    for error in outcomes:
        assert isinstance(error, nbagent.SessionWriteError), outcomes
        assert str(db) in str(error) and "the disk is full" in str(error), str(error)
