"""A kill campaign: SIGKILL at chosen points, then count acknowledged events lost (SPEC §6.2–§6.4).

Each case runs ``kill_child.py`` (a session with tools, streams, injects from the loop and from a
worker thread, and a clean close) and kills it at one point: just before a write commits, just after
one, mid-tool, mid-stream, during the close's checkpoint, and during a resume's repair (a double
kill). Then a fresh process resumes. Every acknowledged message must be in the log exactly once,
the log must be continuous and pass the invariants, and the session must go on. Rerun it with
more occurrences of every point: ``NBAGENT_KILL_CAMPAIGN=full pytest tests/test_kill_campaign.py``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import nbagent
from nbagent.testing import check_invariants

CHILD = Path(__file__).with_name("kill_child.py")
FULL = os.environ.get("NBAGENT_KILL_CAMPAIGN") == "full"
NTHS = range(1, 9) if FULL else (1, 3)
POINTS = ["before-commit", "after-commit", "mid-tool", "mid-stream", "checkpoint"]
CASES = [(p, n) for p in POINTS for n in (NTHS if p in ("before-commit", "after-commit") else (1, 2))]
CASES = [c for c in CASES if c != ("checkpoint", 2)]  # one clean close per run


class Killed:
    """What one killed child had acknowledged, and where it stopped."""

    def __init__(self) -> None:
        self.acked: list[str] = []
        self.session: str | None = None
        self.reached = False


def run_child(db: Path, tmpdir: Path, point: str, nth: int, *session: str) -> Killed:
    tmpdir.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(db), *session, "--kill-at", point, "--nth", str(nth)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )
    assert proc.stdout is not None
    out = Killed()
    for line in proc.stdout:
        word, _, rest = line.strip().partition(" ")
        if word == "ack":
            out.acked.append(rest)
        elif word == "session":
            out.session = rest
        elif line.strip() == f"at {point} {nth}":
            out.reached = True
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    return out


def inserted_ids(events: tuple[nbagent.Event, ...]) -> Counter[str]:
    return Counter(m["id"] for e in events if e.type == "agent/inbox/spliced" for m in e.data["inserted"])


def verify(db: Path, session: str, acked: list[str]) -> int:
    """Resume in this process; return how many acknowledged messages are missing (must be 0)."""

    async def main() -> int:
        agent = nbagent.resume_session(db, session, model="echo")
        events = agent.events
        assert [e.seq for e in events] == list(range(len(events)))
        ids = inserted_ids(events)
        assert all(count == 1 for count in ids.values()), "a message was recorded twice"
        lost = sum(1 for m in acked if m not in ids)
        check_invariants(events, inbox=agent.inbox)
        run = await agent.run("go on")
        assert run.end is not None and run.end["reason"]["kind"] == "completed"
        check_invariants(agent.events, inbox=agent.inbox)
        await agent.close()
        return lost

    return asyncio.run(main())


@pytest.mark.parametrize(("point", "nth"), CASES, ids=[f"{p}-{n}" for p, n in CASES])
def test_a_sigkill_loses_no_acknowledged_event(tmp_path, point, nth):
    db = tmp_path / "killed.nbagent.sqlite"
    private_tmp = tmp_path / "tmp"
    killed = run_child(db, private_tmp, point, nth)
    assert killed.reached, f"the child never reached {point} #{nth}"
    if killed.session is None:  # killed while creating the file: nothing was acknowledged yet
        assert killed.acked == []
        again = run_child(db, private_tmp, "none", 1)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([db.name, "tmp"])
        assert again.session is not None
        assert verify(db, again.session, again.acked) == 0
    else:
        assert verify(db, killed.session, killed.acked) == 0
    assert list(private_tmp.iterdir()) == []  # no lock files left in the temp folder


@pytest.mark.parametrize("first", ["mid-tool", "mid-stream"])
def test_a_second_kill_during_the_resume_repair_loses_nothing(tmp_path, first):
    """Killed inside a turn, then killed again while resuming commits its repair: the third
    process repairs once and goes on."""
    db = tmp_path / "killed.nbagent.sqlite"
    killed = run_child(db, tmp_path / "tmp1", first, 1)
    assert killed.reached and killed.session is not None
    again = run_child(db, tmp_path / "tmp2", "repair", 1, killed.session)
    assert again.reached, "the resume had nothing to repair"
    assert verify(db, killed.session, killed.acked) == 0
    ends = [e for e in nbagent.read_events(db, killed.session) if e.type == "turn/end"]
    assert [e.data["reason"]["kind"] for e in ends].count("interrupted") == 1
