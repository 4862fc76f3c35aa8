"""Reading never writes: ``list_sessions`` and ``read_events`` create no schema, file or -wal/-shm
(SPEC §6.1), page through a log in seq order, and read consistently while a writer appends."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import nbagent
from nbagent import SessionFileError, SessionNotFoundError, UserMessage
from nbagent.models import Response, ScriptedModel


def snapshot(path: Path) -> dict[str, str | None]:
    """The bytes (as hashes) of a session file and its -wal/-shm; ``None`` for an absent one."""
    out: dict[str, str | None] = {}
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{path}{suffix}")
        out[suffix or "main"] = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
    return out


async def write_session(db: Path, prompts: int = 2) -> str:
    agent = nbagent.open_session(db, model=ScriptedModel([Response(f"answer {i}") for i in range(prompts)]))
    for i in range(prompts):
        await agent.run(f"prompt {i}")
    agent.inject(UserMessage.text("context", {"kind": "cell"}))
    await agent.close()
    return agent.session_id


async def test_read_events_pages_through_a_closed_session_in_seq_order(db):
    sid = await write_session(db)
    before = snapshot(db)
    assert before["-wal"] is None and before["-shm"] is None

    events = nbagent.read_events(db, sid)
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].type == "agent/inbox/spliced"
    assert events[-1].data["inserted"][0]["content"][0]["text"] == "context"

    page = nbagent.read_events(db, sid, after=3, limit=4)
    assert [e.seq for e in page] == [4, 5, 6, 7]
    assert page == events[4:8]
    assert nbagent.read_events(db, sid, after=events[-1].seq) == ()
    assert nbagent.list_sessions(db)[0].events == len(events)
    assert nbagent.list_sessions(db)[0].file == str(db)

    assert snapshot(db) == before


async def test_read_events_names_a_missing_session_and_a_missing_file(db, tmp_path):
    await write_session(db, prompts=1)
    with pytest.raises(SessionNotFoundError, match="no session nope"):
        nbagent.read_events(db, "nope")
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(SessionFileError, match=str(missing)):
        nbagent.read_events(missing, "x")
    assert not missing.exists()
    assert nbagent.list_sessions(missing) == []
    assert not missing.exists()


def test_reading_an_empty_file_creates_no_schema(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert nbagent.list_sessions(empty) == []
    with pytest.raises(SessionNotFoundError):
        nbagent.read_events(empty, "x")
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]


async def test_reading_a_live_session_follows_it_without_creating_files(db):
    agent = nbagent.open_session(db, model=ScriptedModel([Response("one"), Response("two")]))
    await agent.run("first")
    sid = agent.session_id
    seen = nbagent.read_events(db, sid)
    assert seen == agent.events
    await agent.run("second")
    more = nbagent.read_events(db, sid, after=seen[-1].seq)
    assert seen + more == agent.events
    await agent.close()
    assert snapshot(db)["-wal"] is None


def test_a_reader_in_another_process_reads_while_this_one_writes(db):
    """A second process polls ``read_events`` while this process appends: every page it sees is a
    gap-free prefix of the final log."""
    script = textwrap.dedent(
        """
        import sys, time, nbagent
        path, sid, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
        seen = []
        while len(seen) < total:
            page = nbagent.read_events(path, sid, after=seen[-1].seq if seen else -1)
            seen.extend(page)
        assert [e.seq for e in seen] == list(range(total)), [e.seq for e in seen][:20]
        print(len(seen))
        """
    )

    import asyncio

    async def main() -> None:
        n = 60
        agent = nbagent.open_session(db)
        sid = agent.session_id
        agent.inject("first")
        reader = subprocess.Popen(
            [sys.executable, "-c", script, str(db), sid, str(n)], stdout=subprocess.PIPE, text=True
        )
        for i in range(n - 1):
            agent.inject(f"context {i}")
        out, _ = await asyncio.to_thread(reader.communicate, timeout=120)
        assert reader.returncode == 0
        assert int(out) == n
        await agent.close()

    asyncio.run(main())


def run_unprivileged(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child that imports nbagent, then drops to user ``nobody`` when root."""
    prelude = (
        "import os, nbagent, nbagent.sqlite_store\n"
        "if os.geteuid() == 0:\n"
        "    os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
    )
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60)


@pytest.fixture
def public_dir():
    """A folder every user can reach (pytest's own temp folders are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="nbagent-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    path.chmod(0o755)
    shutil.rmtree(path)


async def test_a_reader_without_write_permission_leaves_nothing_behind(public_dir):
    """``read_events`` by a user who can read but not write the file or its folder works and
    leaves no -wal/-shm (``list_sessions`` used to leave both behind)."""
    tmp_path = public_dir
    db = tmp_path / "session.nbagent.sqlite"
    sid = await write_session(db, prompts=1)
    os.chmod(db, 0o444)
    os.chmod(tmp_path, 0o555)
    try:
        before = snapshot(db)
        done = run_unprivileged(
            f"print(len(nbagent.read_events({str(db)!r}, {sid!r})), len(nbagent.list_sessions({str(db)!r})))"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [str(len(nbagent.read_events(db, sid))), "1"]
        assert snapshot(db) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]
    finally:
        os.chmod(tmp_path, 0o755)


def test_a_foreign_file_is_refused_by_readers_unchanged(tmp_path):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    before = snapshot(other)
    with pytest.raises(SessionFileError, match="not an nbagent session file"):
        nbagent.list_sessions(other)
    with pytest.raises(SessionFileError, match="not an nbagent session file"):
        nbagent.read_events(other, "x")
    assert snapshot(other) == before
    conn.close()
