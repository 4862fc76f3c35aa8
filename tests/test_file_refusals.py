"""Files nbagent must not use are refused untouched, and every file failure names its path
(SPEC §6.1, §6.3). Each refusal is checked byte for byte, ``-wal`` and ``-shm`` included."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from filestate import freeze_with_wal, run_unprivileged, snapshot, wal_database

import nbagent
from nbagent import SessionCorruptError, SessionFileError, SessionNotFoundError
from nbagent.models import ScriptedModel
from nbagent.store.sqlite.store import APPLICATION_ID


def every_entry_point(path: Path) -> list[tuple[str, type[Exception]]]:
    """Call each way in to a file; return what each raised."""

    async def main() -> list[tuple[str, type[Exception]]]:
        out = []
        for name, call in [
            ("open_session", lambda: nbagent.open_session(path)),
            ("resume_session", lambda: nbagent.resume_session(path)),
            ("list_sessions", lambda: nbagent.list_sessions(path)),
            ("read_events", lambda: nbagent.read_events(path, "x")),
        ]:
            try:
                result = call()
            except Exception as exc:  # collected and asserted on below
                assert str(path) in str(exc), f"{name}: {exc}"
                out.append((name, type(exc)))
            else:
                if hasattr(result, "close"):
                    await result.close()
                out.append((name, type(None)))
        return out

    return asyncio.run(main())


def foreign_with_leftover_wal(tmp_path: Path, statements: list[str]) -> Path:
    build = tmp_path / "build.sqlite"
    conn = wal_database(build, statements)
    target = tmp_path / "theirs.sqlite"
    freeze_with_wal(build, target)
    conn.close()
    return target


@pytest.mark.parametrize(
    "statements",
    [
        pytest.param(["CREATE TABLE notes (x)", "INSERT INTO notes VALUES (1)"], id="another-app-table"),
        pytest.param(["PRAGMA application_id = 1234", "CREATE TABLE t (x)"], id="another-application-id"),
        pytest.param(["CREATE VIEW v AS SELECT 1 AS x"], id="only-a-view"),
        pytest.param(["PRAGMA user_version = 7"], id="only-user-version"),
        pytest.param(
            [f"PRAGMA application_id = {APPLICATION_ID}", "PRAGMA user_version = 99"], id="newer-nbagent"
        ),
    ],
)
def test_a_foreign_or_newer_file_with_a_leftover_wal_is_refused_byte_identical(tmp_path, statements):
    """Refusing used to checkpoint the leftover -wal into the file (and delete -wal/-shm) while
    the message said the file was left unchanged."""
    path = foreign_with_leftover_wal(tmp_path, statements)
    before = snapshot(path)
    assert before["-wal"] is not None and before["-shm"] is not None
    outcomes = every_entry_point(path)
    assert all(issubclass(kind, SessionFileError) for _, kind in outcomes), outcomes
    assert snapshot(path) == before


def test_a_file_that_is_not_sqlite_is_refused_unchanged(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 20)
    before = snapshot(path)
    outcomes = every_entry_point(path)
    assert all(issubclass(kind, SessionFileError) for _, kind in outcomes), outcomes
    assert snapshot(path) == before


def test_an_empty_sqlite_database_of_another_program_is_not_taken_over(tmp_path):
    path = tmp_path / "empty-db.sqlite"
    sqlite3.connect(path).execute("VACUUM").connection.close()  # a valid database with no tables
    assert path.stat().st_size > 0
    before = snapshot(path)
    outcomes = every_entry_point(path)
    assert all(issubclass(kind, SessionFileError) for _, kind in outcomes), outcomes
    assert snapshot(path) == before


async def session_file(db: Path, prompts: int = 3) -> str:
    agent = nbagent.open_session(db, model=ScriptedModel([f"answer {i}" for i in range(prompts)]))
    for i in range(prompts):
        await agent.run(f"prompt {i} " + "x" * 2000)
        agent.inject(f"context {i} " + "y" * 2000)
    await agent.close()
    return agent.session_id


def test_a_truncated_file_is_refused_unchanged(db):
    asyncio.run(session_file(db))
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.truncate(size - 4096)
    before = snapshot(db)
    outcomes = every_entry_point(db)
    assert all(kind is SessionCorruptError for _, kind in outcomes), outcomes
    assert snapshot(db) == before


def test_a_corrupt_middle_page_is_refused_before_anything_is_written(db):
    """``open_session`` used to add a session to a file with a damaged page."""
    asyncio.run(session_file(db, prompts=6))
    page = 4096
    pages = db.stat().st_size // page
    with open(db, "r+b") as f:
        f.seek(page * (pages // 2))
        f.write(b"\xff" * page)
    before = snapshot(db)

    async def main() -> None:
        with pytest.raises(SessionCorruptError, match=str(db)):
            nbagent.open_session(db)

    asyncio.run(main())
    assert snapshot(db) == before


def test_a_directory_path_names_itself(tmp_path):
    folder = tmp_path / "a-folder.sqlite"
    folder.mkdir()
    outcomes = dict(every_entry_point(folder))
    assert outcomes["open_session"] is SessionFileError
    assert outcomes["resume_session"] is SessionFileError
    assert outcomes["read_events"] is SessionFileError
    assert outcomes["list_sessions"] is SessionFileError


def test_a_read_only_folder_is_named_with_the_way_out(public_dir):
    os.chmod(public_dir, 0o555)
    target = public_dir / "new.nbagent.sqlite"
    done = run_unprivileged(
        "async def main():\n"
        "    try:\n"
        f"        nbagent.open_session({str(target)!r})\n"
        "    except nbagent.SessionFileError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
        "asyncio.run(main())\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("SessionFileError") and str(target) in done.stdout
    assert "writable" in done.stdout
    assert list(public_dir.iterdir()) == []


def test_a_read_only_file_is_refused_at_open_not_at_the_first_inject(public_dir):
    db = public_dir / "s.nbagent.sqlite"
    asyncio.run(session_file(db, prompts=1))
    os.chmod(db, 0o444)
    before = snapshot(db)
    done = run_unprivileged(
        "async def main():\n"
        "    for call in (lambda: nbagent.open_session(P), lambda: nbagent.resume_session(P)):\n"
        "        try:\n"
        "            call()\n"
        "        except nbagent.SessionFileError as exc:\n"
        "            print(type(exc).__name__, exc)\n"
        "    print(len(nbagent.list_sessions(P)))\n"
        f"P = {str(db)!r}\n"
        "asyncio.run(main())\n"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and lines[2] == "1", done.stdout
    assert all(
        line.startswith("SessionFileError") and "read-only" in line and str(db) in line for line in lines[:2]
    )
    assert snapshot(db) == before


def test_a_full_disk_when_opening_is_a_session_file_error(small_disk):
    small_disk.fill()
    target = small_disk.path / "new.nbagent.sqlite"

    async def main() -> None:
        with pytest.raises(SessionFileError, match="disk is full") as caught:
            nbagent.open_session(target)
        assert str(target) in str(caught.value)

    asyncio.run(main())
    assert sorted(p.name for p in small_disk.path.iterdir()) == ["filler"]


def test_an_empty_file_is_read_as_no_session_and_stays_empty(tmp_path):
    path = tmp_path / "empty.sqlite"
    path.touch()
    missing = tmp_path / "missing.sqlite"

    async def main() -> None:
        assert nbagent.list_sessions(missing) == []  # reading a missing file creates nothing
        with pytest.raises(SessionFileError, match="does not exist"):
            nbagent.resume_session(missing)
        with pytest.raises(SessionNotFoundError, match="holds no session"):
            nbagent.resume_session(path)
        assert nbagent.list_sessions(path) == []
        with pytest.raises(SessionNotFoundError):
            nbagent.read_events(path, "x")

    asyncio.run(main())
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]


def test_resuming_a_session_that_is_not_there_changes_nothing(db):
    asyncio.run(session_file(db, prompts=1))
    before = snapshot(db)

    async def main() -> None:
        with pytest.raises(SessionNotFoundError, match="no session nope"):
            nbagent.resume_session(db, "nope")

    asyncio.run(main())
    assert snapshot(db) == before


def damage(db: Path, sql: str, *args: object) -> None:
    conn = sqlite3.connect(db)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def seq_of(db: Path, sid: str, type_: str, nth: int = 0) -> int:
    return [e.seq for e in nbagent.read_events(db, sid) if e.type == type_][nth]


def test_a_deleted_row_is_named_by_resume_and_nothing_changes(db):
    sid = asyncio.run(session_file(db))
    gone = seq_of(db, sid, "user/message", 1)
    damage(db, "DELETE FROM events WHERE seq = ?", gone)
    before = snapshot(db)

    async def main() -> None:
        with pytest.raises(SessionCorruptError, match=f"seq {gone} is missing before seq {gone + 1}"):
            nbagent.resume_session(db)

    asyncio.run(main())
    assert snapshot(db) == before


def test_a_row_of_bad_json_is_named_by_resume_and_nothing_changes(db):
    sid = asyncio.run(session_file(db))
    bad = seq_of(db, sid, "assistant/message", 0)
    damage(db, "UPDATE events SET data = '{\"turn\": 1, oops' WHERE seq = ?", bad)
    before = snapshot(db)

    async def main() -> None:
        with pytest.raises(SessionCorruptError, match=f"seq {bad} is damaged"):
            nbagent.resume_session(db)

    asyncio.run(main())
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "how",
    [
        # An impossible splice is refused by resume itself (test_store_files).
        pytest.param("undecodable-message", id="undecodable-message"),
    ],
)
def test_damage_only_a_full_read_finds_stops_the_first_waking_call_before_it_records(db, how):
    """The next followup used to consume the prompt and end ``error``; now it raises before
    anything is recorded and the log is unchanged."""
    sid = asyncio.run(session_file(db))
    if how == "impossible-splice":
        seq = seq_of(db, sid, "agent/inbox/spliced", 1)  # a claim, well before the last turn/end
        damage(db, "UPDATE events SET data = json_set(data, '$.removed_count', 9) WHERE seq = ?", seq)
    else:
        seq = seq_of(db, sid, "user/message", 0)
        damage(db, "UPDATE events SET data = json_remove(data, '$.content') WHERE seq = ?", seq)
    before_events = nbagent.read_events(db, sid)
    before = snapshot(db)

    async def main() -> None:
        agent = nbagent.resume_session(db, sid)
        agent.inject("context is not a waking call")
        with pytest.raises(SessionCorruptError, match=f"seq {seq}"):
            agent.followup("a new prompt")
        with pytest.raises(SessionCorruptError, match=f"seq {seq}"):
            agent.steer("steering")
        assert agent.status == "idle"
        await agent.close()

    asyncio.run(main())
    after = nbagent.read_events(db, sid)
    assert after[: len(before_events)] == before_events
    assert [e.type for e in after[len(before_events) :]] == ["agent/inbox/spliced"]  # the inject only
    assert snapshot(db)["-wal"] is None and before["-wal"] is None


def test_the_files_nbagent_creates_are_private(db):
    asyncio.run(session_file(db, prompts=1))
    assert db.stat().st_mode & 0o777 == 0o600


def test_a_bare_sqlite_error_never_escapes(tmp_path):
    """``resume_session`` used to raise a bare ``sqlite3.DatabaseError`` for a damaged file."""
    db = tmp_path / "s.nbagent.sqlite"
    asyncio.run(session_file(db, prompts=2))
    raw = bytearray(db.read_bytes())
    raw[100:4096] = b"\x13" * (4096 - 100)  # page 1's b-tree: the schema table itself
    db.write_bytes(bytes(raw))
    outcomes = every_entry_point(db)
    assert all(issubclass(kind, SessionFileError) for _, kind in outcomes), outcomes
    code = f"import nbagent; print(nbagent.list_sessions({str(db)!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "sqlite3." not in done.stderr.splitlines()[-1]
    assert "SessionCorruptError" in done.stderr.splitlines()[-1]


def test_a_read_only_mount_is_refused_for_writing_and_read_as_it_is(small_disk):
    db = small_disk.path / "s.nbagent.sqlite"
    sid = asyncio.run(session_file(db, prompts=1))
    remount = subprocess.run(
        ["mount", "-o", "remount,ro", str(small_disk.path)], capture_output=True, text=True
    )
    if remount.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {remount.stderr.strip()}")
    try:
        before = snapshot(db)

        async def main() -> None:
            for call in (lambda: nbagent.open_session(db), lambda: nbagent.resume_session(db)):
                with pytest.raises(SessionFileError, match="read-only") as caught:
                    call()
                assert str(db) in str(caught.value)
            assert len(nbagent.read_events(db, sid)) > 0
            assert nbagent.list_sessions(db)[0].id == sid

        asyncio.run(main())
        assert snapshot(db) == before
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk.path)], check=False)
