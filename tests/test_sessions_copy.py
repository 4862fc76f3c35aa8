"""``nbagent sessions copy SRC DST``: SQLite ⇄ PostgreSQL, byte-identical in events, idempotent,
refusing a different session under the same id (SPEC §6.5)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import psycopg
import pytest
from eventtrace import run

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.store.copying import CopyResult, SessionConflictError, copy_sessions
from nbagent.testing import check_invariants


def sqlite_rows(path) -> tuple[list[tuple], list[tuple]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sessions = conn.execute("SELECT * FROM sessions ORDER BY id").fetchall()
        events = conn.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall()
        return sessions, events
    finally:
        conn.close()


def pg_rows(url: str) -> tuple[list[tuple], list[tuple]]:
    with psycopg.connect(url) as conn:
        schema = conn.execute("SELECT current_setting('nbagent.schema')").fetchone()[0]
        sessions = conn.execute(f'SELECT * FROM "{schema}".sessions ORDER BY id').fetchall()
        events = conn.execute(
            f'SELECT session_id, seq, time, type, data::text, inbox_pending FROM "{schema}".events '
            "ORDER BY session_id, seq"
        ).fetchall()
        return sessions, events


async def _two_sessions(path) -> list[str]:
    @nbagent.tool
    def lookup(key: str) -> str:
        return f"value of {key} — ünïcödé ✓"

    model = ScriptedModel([Response(tool_calls=[ToolCall("lookup", {"key": "k"}, id="c1")]), "done 1.50e3"])
    a = nbagent.open_session(path, model=model, tools=[lookup], title="first", metadata={"n": 1})
    a.inject(nbagent.UserMessage.text('ctx\n\twith "quotes" and \\u0000-like text', source={"kind": "cell"}))
    await a.run("go")
    a.inject("left pending")
    await a.close()
    b = nbagent.open_session(path, title="second")
    await b.run("hello")
    await b.close()
    return [a.session_id, b.session_id]


def test_sqlite_to_postgresql_and_back_is_byte_identical_and_idempotent(tmp_path, pg_url):
    src, back = tmp_path / "src.nbagent.sqlite", tmp_path / "back.nbagent.sqlite"
    ids = run(_two_sessions(src))
    first = copy_sessions(src, pg_url)
    assert [(r.session_id, r.outcome) for r in first] == [(ids[0], "copied"), (ids[1], "copied")]
    assert all(r.appended == r.events > 0 for r in first)
    assert pg_rows(pg_url) == sqlite_rows(src)
    again = copy_sessions(src, pg_url)
    assert [r.outcome for r in again] == ["up to date", "up to date"]
    assert all(r.appended == 0 for r in again)
    assert pg_rows(pg_url) == sqlite_rows(src)
    copy_sessions(pg_url, back)
    assert sqlite_rows(back) == sqlite_rows(src)

    async def resumed_in_postgresql():
        agent = nbagent.resume_session(pg_url, ids[0], model=ScriptedModel(["after the copy"]))
        assert [m.plain_text for m in agent.inbox.next_step] == ["left pending"]
        r = await agent.run("continue")
        assert r.turns == (2,)
        check_invariants(agent.events, inbox=agent.inbox)
        await agent.close()

    run(resumed_in_postgresql())
    # The copy in PostgreSQL grew: copying back appends only the new rows.
    grown = copy_sessions(pg_url, back, session_id=ids[0])
    (result,) = grown
    assert result.outcome == "extended" and result.appended > 0
    assert sqlite_rows(back) == pg_rows(pg_url)
    # The SQLite source is now behind the PostgreSQL copy: copying it again changes nothing.
    before = pg_rows(pg_url)
    assert [r.outcome for r in copy_sessions(src, pg_url)] == ["ahead", "up to date"]
    assert pg_rows(pg_url) == before


def test_a_different_session_with_the_same_id_is_refused_and_left_unchanged(tmp_path, pg_url):
    src = tmp_path / "a.nbagent.sqlite"

    async def same_id_elsewhere():
        one = nbagent.open_session(src, session_id="shared-id")
        await one.run("mine")
        await one.close()
        other = nbagent.open_session(pg_url, session_id="shared-id")
        await other.run("theirs")
        await other.close()

    run(same_id_elsewhere())
    before = pg_rows(pg_url)
    with pytest.raises(SessionConflictError, match="shared-id"):
        copy_sessions(src, pg_url)
    assert pg_rows(pg_url) == before


def test_the_command_line_copies_and_reports(tmp_path, pg_url):
    src, dst = tmp_path / "a.nbagent.sqlite", tmp_path / "b.nbagent.sqlite"
    ids = run(_two_sessions(src))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbagent", "sessions", *args], capture_output=True, text=True, timeout=120
        )

    done = cli("copy", str(src), pg_url, "--session", ids[1])
    assert done.returncode == 0, done.stderr
    events = nbagent.list_sessions(src)[0].events
    assert done.stdout.split() == [ids[1], "copied", str(events), "of", str(events), "events", "written"]
    assert cli("copy", pg_url, str(dst)).returncode == 0
    assert [r.id for r in nbagent.list_sessions(dst)] == [ids[1]]
    listed = cli("list", pg_url)
    assert listed.returncode == 0 and listed.stdout.startswith(ids[1])
    missing = cli("copy", str(src), pg_url, "--session", "nope")
    assert missing.returncode == 1 and "no session nope" in missing.stderr
    assert isinstance(copy_sessions(src, dst)[0], CopyResult)
