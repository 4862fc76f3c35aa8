"""The SQLite session file: format checks, one writer, atomic writes, resume and crash repair (SPEC §6)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from eventtrace import trace

import nbagent
from nbagent import SessionCorruptError, SessionFileError, SessionLockedError, SessionWriteError, UserMessage
from nbagent.models import ScriptedModel
from nbagent.store.sqlite.store import APPLICATION_ID
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


@pytest.mark.sqlite_only
async def test_a_new_file_is_private_wal_and_carries_the_application_id(db):
    agent = nbagent.open_session(db, title="t", notebook="n.ipynb")
    agent.inject("x")
    await agent.close()
    assert (os.stat(db).st_mode & 0o777) == 0o600
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = conn.execute("SELECT title, notebook, model FROM sessions").fetchone()
    assert row == ("t", "n.ipynb", "echo")
    ((seq, type_, data),) = conn.execute("SELECT seq, type, data FROM events").fetchall()
    assert (seq, type_) == (0, "agent/inbox/spliced") and '"text":"x"' in data


async def test_a_foreign_sqlite_file_is_refused_and_left_byte_identical(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()
    before = path.read_bytes()

    with pytest.raises(SessionFileError, match="not an nbagent session file"):
        nbagent.open_session(path)
    with pytest.raises(SessionFileError):
        nbagent.resume_session(path)
    assert path.read_bytes() == before


async def test_a_non_database_file_and_a_newer_schema_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("just text " * 50)
    newer = tmp_path / "newer.sqlite"

    with pytest.raises(SessionFileError, match="not an nbagent session file"):
        nbagent.open_session(text)
    (await _closed(nbagent.open_session(newer)))
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(SessionFileError, match="newer"):
        nbagent.open_session(newer)
    assert text.read_text() == "just text " * 50


async def _closed(agent):
    await agent.close()
    return agent


async def test_two_writers_of_one_session_are_refused_with_the_holder_named(db):
    agent = nbagent.open_session(db)
    with pytest.raises(SessionLockedError, match=f"process {os.getpid()}"):
        nbagent.resume_session(db, agent.session_id)
    other = nbagent.open_session(db)  # another session in the same file is fine
    other.inject("b")
    agent.inject("a")
    await other.close()
    await agent.close()
    again = nbagent.resume_session(db, agent.session_id)
    await again.close()


async def test_a_writer_in_another_process_holds_the_lease_until_it_dies(db):
    agent = nbagent.open_session(db)
    sid = agent.session_id
    await agent.close()
    code = f"""
import asyncio, sys, nbagent
async def main():
    agent = nbagent.resume_session({str(db)!r}, {sid!r})
    print("ready", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        with pytest.raises(SessionLockedError, match=f"process {proc.pid}"):
            nbagent.resume_session(db, sid)
    finally:
        proc.kill()
        proc.wait()

    agent = nbagent.resume_session(db, sid)
    await agent.close()


async def test_a_failed_write_raises_and_keeps_memory_and_disk_consistent(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    kept = agent.inject("kept")
    real = agent._file.write

    def broken(rows, **kw):
        raise sqlite3.OperationalError("disk I/O error")

    agent._file.write = broken
    with pytest.raises(SessionWriteError, match="nothing was recorded"):
        agent.inject("lost")
    assert agent.inbox.next_step == (kept,)
    assert len(agent.events) == 1
    agent._file.write = real
    agent.inject("next")
    assert [e.seq for e in agent.events] == [0, 1]
    await agent.close()
    again = nbagent.resume_session(db)
    assert [m.plain_text for m in again.inbox.next_step] == ["kept", "next"]
    check_invariants(again.events, inbox=again.inbox)
    await again.close()


async def test_resume_picks_the_session_with_the_most_recent_event_and_lists_sessions(db):
    a = nbagent.open_session(db)
    b = nbagent.open_session(db)
    await b.run("b first")
    await asyncio.sleep(0.01)
    await a.run("a later")
    await a.close()
    await b.close()
    rows = nbagent.list_sessions(db)
    assert [r.id for r in rows] == [a.session_id, b.session_id]
    assert rows[0].turns == 1 and rows[0].events > 5 and rows[0].last_activity is not None
    again = nbagent.resume_session(db)
    assert again.session_id == a.session_id
    assert len(again.events) == rows[0].events
    r = await again.run("continue")
    assert r.turns == (2,)
    header = [e.data for e in again.events if e.type == "request/header"]
    assert [h["reason"] for h in header] == ["initial", "resume"]
    check_invariants(again.events, inbox=again.inbox, requests=None)
    await again.close()


@pytest.mark.sqlite_only
async def test_an_impossible_stored_splice_is_corruption_naming_its_seq(db):
    agent = nbagent.open_session(db)
    agent.inject("a")
    await agent.close()
    sid = agent.session_id
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO events VALUES (?, 1, 0, 'agent/inbox/spliced', ?, NULL)",
        (sid, '{"target":"next-step","start":5,"removed_count":1,"inserted":[]}'),
    )
    conn.commit()
    conn.close()

    with pytest.raises(SessionCorruptError, match="seq 1"):
        nbagent.resume_session(db)


KILL_SCRIPT = """
import asyncio, sys, time, nbagent
from nbagent.models import ScriptedModel, Response, ToolCall

@nbagent.tool
def write_file(path: str) -> str:
    print("tool running", flush=True)
    time.sleep(60)
    return "never"

@nbagent.tool
def read_file(path: str) -> str:
    return "unused"

async def main():
    model = ScriptedModel([Response(tool_calls=[ToolCall("write_file", {"path": "a"}, id="c1"),
                                                ToolCall("read_file", {"path": "a"}, id="c2")])])
    agent = nbagent.open_session(sys.argv[1], model=model, tools=[write_file, read_file])
    agent.inject(nbagent.UserMessage.text("pending context", source={"kind": "cell"}))
    agent.followup("do it")
    await agent.when_idle()
asyncio.run(main())
"""


async def test_a_process_killed_mid_tool_is_repaired_on_resume_then_runs_normally(db, tmp_path):
    script = tmp_path / "kill_me.py"
    script.write_text(textwrap.dedent(KILL_SCRIPT))
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "tool running"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    model = ScriptedModel(["checked the file first"])
    t0 = time.perf_counter()
    agent = nbagent.resume_session(db, model=model)
    assert time.perf_counter() - t0 < 5
    lines = trace(agent.events)
    assert lines[lines.index("TC c1") :] == [
        "TC c1",
        "TR c1 TOOL_OUTCOME_UNKNOWN",
        "TR c2 TOOL_NOT_STARTED",
        "SE 1.1",
        "TE 1 interrupted",
    ]
    texts = {
        e.data["message"]["source"]["call_id"]: e.data["message"]["content"][0]["content"][0]["text"]
        for e in agent.events
        if e.type == "tool/result"
    }
    assert "outcome is unknown" in texts["c1"] and "may be retried" in texts["c2"]
    assert not agent.inbox.has_pending
    r = await agent.run("what happened?")
    assert r.turns == (2,) and r.text == "checked the file first"
    after = trace(agent.events)[len(lines) :]
    assert after == [
        "INS nt 0 ['what happened?']",
        "TS 2",
        "CLM nt 1",
        "SS 2.1",
        "UM what happened?",
        "RH resume",
        "CH",
        "AM 2.1 'checked the file first'",
        "SE 2.1",
        "TE 2 completed",
    ]
    sent = model.requests[0].messages
    assert [(m.role, m.kind) for m in sent] == [
        ("user", "cell"),
        ("user", "user"),
        ("assistant", "model"),
        ("user", "tool"),
        ("user", "tool"),
        ("user", "user"),
    ]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_a_pending_inject_survives_close_and_resume_without_a_turn(db):
    agent = nbagent.open_session(db)
    m = agent.inject(UserMessage.text("ctx", source={"kind": "cell"}))
    await agent.close()
    again = nbagent.resume_session(db)
    assert again.inbox.next_step == (m,)
    assert len(again.events) == 1
    await again.close()


async def test_a_failed_turn_start_keeps_the_message_pending_and_reports_the_error(db):
    agent = nbagent.open_session(db, model=ScriptedModel(["for p", "for q"]))
    errors = []
    agent.on("error", lambda n: errors.append(n.error))
    real = agent._file.write
    calls = []

    def fail_second(rows, **kw):
        calls.append(rows)
        if len(calls) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        return real(rows, **kw)

    agent._file.write = fail_second
    sent = agent.followup("p")
    assert isinstance(sent, UserMessage)
    assert trace(agent.events) == ["INS nt 0 ['p']"]
    assert agent.status == "idle" and agent.inbox.next_turn == (sent,)
    assert errors and isinstance(errors[0], SessionWriteError)
    r = await agent.run("q")
    assert r.turns == (1, 2) and r.text == "for q"
    assert [x for x in trace(agent.events) if x.startswith("UM")] == ["UM p", "UM q"]
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


def test_writers_of_different_sessions_in_one_file_never_see_a_locked_database(db):
    code = f"""
import asyncio, sys, threading, nbagent
async def main():
    agent = nbagent.open_session({str(db)!r})
    def work(i):
        for n in range(40):
            agent.inject(f"p{{sys.argv[1]}}-{{i}}-{{n}}")
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(len(agent.events), flush=True)
    await agent.close()
asyncio.run(main())
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(k)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for k in range(3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["160", "160", "160"]
    rows = nbagent.list_sessions(db)
    assert sorted(r.events for r in rows) == [160, 160, 160]


@pytest.mark.sqlite_only
async def test_a_gap_in_the_stored_log_is_named_at_resume(db):
    agent = nbagent.open_session(db)
    await agent.run("hello")
    await agent.close()
    chunk_seq = next(e.seq for e in agent.events if e.type == "assistant/chunk")
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM events WHERE seq = ?", (chunk_seq,))
    conn.commit()
    conn.close()

    with pytest.raises(SessionCorruptError, match=f"seq {chunk_seq} is missing"):
        nbagent.resume_session(db)


def _stored(db) -> list[nbagent.Event]:
    (row,) = nbagent.list_sessions(db)
    return list(nbagent.read_events(db, row.id))


async def test_what_a_request_sees_and_a_tool_call_are_durable_before_they_happen(db):
    from nbagent.models import Response, ToolCall
    from nbagent.testing import derive_history

    seen: dict[str, object] = {}

    def probe() -> nbagent.ToolResult:
        stored = _stored(db)
        seen["call"] = [e.type for e in stored][-1]
        return nbagent.ToolResult(
            "ok", additional_contexts=[UserMessage.text("ctx", source={"kind": "plugin", "plugin": "p"})]
        )

    def second(request):
        stored = _stored(db)
        seen["history"] = derive_history(stored) == request.messages
        seen["result_durable"] = any(e.type == "tool/result" for e in stored)
        return Response("done")

    agent = nbagent.open_session(
        db,
        model=ScriptedModel([Response(tool_calls=[ToolCall("probe", id="c1")]), second]),
        tools=[probe],
    )
    await agent.run("go")
    stored = _stored(db)
    assert [e.seq for e in stored] == [e.seq for e in agent.events] and stored == list(agent.events)
    await agent.close()
    assert seen == {"call": "tool/call", "history": True, "result_durable": True}
