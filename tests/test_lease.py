"""One writer per session (SPEC §6.4): an OS lock on a byte range of the session file itself.

Every process that opens the same file sees the lease whatever its temp folder or environment;
the holder is named; a dead holder frees it at once; nothing is left behind after close.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nbagent
from nbagent import SessionLockedError

HOLD = textwrap.dedent(
    """
    import asyncio, sys, nbagent

    async def main():
        agent = nbagent.resume_session(sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else nbagent.open_session(sys.argv[1])
        agent.inject("held")
        print(agent.session_id, flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        await agent.close()
        print("closed", flush=True)

    asyncio.run(main())
    """
)

TRY = textwrap.dedent(
    """
    import asyncio, sys, nbagent

    async def main():
        try:
            agent = nbagent.resume_session(sys.argv[1], sys.argv[2])
        except nbagent.SessionLockedError as exc:
            print("locked:", exc, flush=True)
            return
        agent.inject("mine")
        print("won", flush=True)
        await agent.close()

    asyncio.run(main())
    """
)


def env_with_tmpdir(tmpdir: Path) -> dict[str, str]:
    tmpdir.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmpdir)}


def holder(db: Path, tmpdir: Path, *sid: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), *sid],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env_with_tmpdir(tmpdir),
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def attempt(db: Path, sid: str, tmpdir: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", TRY, str(db), sid],
        capture_output=True,
        text=True,
        env=env_with_tmpdir(tmpdir),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_process_with_another_temp_folder_sees_the_lease(db, tmp_path):
    """The lease used to live in $TMPDIR: a process with another TMPDIR opened a held session and
    failed later with 'UNIQUE constraint failed'. Now it is refused at once, naming the holder."""
    first, sid = holder(db, tmp_path / "tmp-a")
    try:
        answer = attempt(db, sid, tmp_path / "tmp-b")
        assert answer.startswith("locked:"), answer
        assert f"process {first.pid}" in answer and str(db) in answer
    finally:
        first.communicate("close\n", timeout=60)
    assert attempt(db, sid, tmp_path / "tmp-b") == "won"
    assert [e.type for e in nbagent.read_events(db, sid)] == ["agent/inbox/spliced"] * 2


def test_the_lease_leaves_nothing_behind(db, tmp_path):
    """Twenty opens and closes in a child with a private temp folder: the temp folder stays empty
    (829 lock files used to pile up there) and only the session file remains beside the notebook."""
    private = tmp_path / "private-tmp"
    code = textwrap.dedent(
        f"""
        import asyncio, nbagent

        async def main():
            for _ in range(10):
                a = nbagent.open_session({str(db)!r})
                a.inject("x")
                await a.close()
                b = nbagent.resume_session({str(db)!r}, a.session_id)
                await b.close()

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env_with_tmpdir(private), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert list(private.iterdir()) == []
    assert sorted(p.name for p in db.parent.iterdir()) == sorted([db.name, "private-tmp"])
    assert len(nbagent.list_sessions(db)) == 10


def test_a_killed_holder_frees_the_session_at_once(db, tmp_path):
    first, sid = holder(db, tmp_path / "tmp-a")
    assert attempt(db, sid, tmp_path / "tmp-b").startswith("locked:")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert attempt(db, sid, tmp_path / "tmp-c") == "won"


async def test_the_lease_outlives_other_connections_to_the_file_closing(db, tmp_path):
    """SQLite and readers open and close their own descriptors of the file; the lease (unlike a
    classic POSIX record lock) stays held through all of that."""
    agent = nbagent.open_session(db)
    agent.inject("held here")
    other = nbagent.open_session(db)
    for _ in range(3):
        assert len(nbagent.list_sessions(db)) == 2
        assert len(nbagent.read_events(db, agent.session_id)) == 1
    await other.close()
    again = nbagent.resume_session(db, other.session_id)
    await again.close()
    answer = await asyncio.to_thread(attempt, db, agent.session_id, tmp_path / "t")
    assert answer.startswith("locked:") and f"process {os.getpid()}" in answer
    await agent.close()
    assert await asyncio.to_thread(attempt, db, agent.session_id, tmp_path / "t") == "won"


async def test_two_agents_of_one_process_cannot_hold_one_session(db):
    agent = nbagent.open_session(db)
    with pytest.raises(SessionLockedError, match="another agent of this process"):
        nbagent.resume_session(db, agent.session_id)
    await agent.close()
    again = nbagent.resume_session(db, agent.session_id)
    await again.close()


def test_a_lease_race_has_exactly_one_winner(db, tmp_path):
    """Six processes resume one session at the same moment, five times: one wins each round."""

    async def create() -> str:
        agent = nbagent.open_session(db)
        await agent.close()
        return agent.session_id

    sid = asyncio.run(create())
    racer = textwrap.dedent(
        """
        import asyncio, sys, nbagent

        async def main():
            sys.stdin.readline()  # the start gun
            try:
                agent = nbagent.resume_session(sys.argv[1], sys.argv[2])
            except nbagent.SessionLockedError:
                print("lost", flush=True)
                return
            print("won", flush=True)
            sys.stdin.readline()  # hold until every racer has answered
            await agent.close()

        asyncio.run(main())
        """
    )
    for round_ in range(5):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", racer, str(db), sid],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env_with_tmpdir(tmp_path / f"tmp-{round_}-{i}"),
            )
            for i in range(6)
        ]
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        answers = [p.stdout.readline().strip() for p in procs if p.stdout is not None]
        for p in procs:
            p.communicate("done\n", timeout=60)
        assert sorted(answers) == ["lost"] * 5 + ["won"], answers
