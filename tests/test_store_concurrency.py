"""Several processes on one store at once: a race for one session's lease, and many writers of
different sessions (SPEC §6.4), on both stores."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from eventtrace import run

import nbagent
from nbagent import SessionLockedError
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores

RACER = """
import asyncio, sys, nbagent
async def main():
    sys.stdin.readline()  # the starting gun
    try:
        agent = nbagent.resume_session(sys.argv[1], sys.argv[2])
    except nbagent.SessionLockedError as exc:
        print("locked", exc, flush=True)
        return
    print("won", flush=True)
    sys.stdin.readline()  # hold the lease until told to stop
    await agent.close()
asyncio.run(main())
"""


def test_two_processes_racing_for_one_session_one_wins_the_other_is_told_who(db):
    async def create():
        agent = nbagent.open_session(db)
        agent.inject("seed")
        await agent.close()
        return agent.session_id

    sid = run(create())
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(db), sid],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for p in racers:
            p.stdin.write("go\n")
            p.stdin.flush()
        answers = [p.stdout.readline().strip() for p in racers]
        assert sorted(a.split()[0] for a in answers) == ["locked", "won"], answers
        winner = racers[[a.split()[0] for a in answers].index("won")]
        loser_said = next(a for a in answers if a.startswith("locked"))
        assert f"process {winner.pid}" in loser_said and sid in loser_said

        async def blocked():
            with pytest.raises(SessionLockedError, match=f"process {winner.pid}"):
                nbagent.resume_session(db, sid)

        run(blocked())
        winner.stdin.write("stop\n")
        winner.stdin.flush()
        assert winner.wait(timeout=60) == 0
    finally:
        for p in racers:
            p.kill()
            p.communicate()

    async def after():
        agent = nbagent.resume_session(db, sid)
        assert [e.type for e in agent.events] == ["agent/inbox/spliced"]
        await agent.close()

    run(after())


WRITER = """
import asyncio, json, sys, nbagent
async def main():
    sys.stdin.readline()
    agent = nbagent.open_session(sys.argv[1], title=f"writer {sys.argv[2]}")
    delivered = []
    for i in range(200):
        call = agent.followup if i % 10 == 0 else agent.inject
        delivered.append(call(f"w{sys.argv[2]}-{i}").id)
        if i % 25 == 0:
            await asyncio.sleep(0)  # let the driver run a turn now and then
    await agent.when_idle()
    print(json.dumps({"session": agent.session_id, "delivered": delivered, "events": len(agent.events)}))
    await agent.close()
asyncio.run(main())
"""


def test_four_processes_times_200_deliveries_into_one_store_lose_nothing(db):
    """They also race to create the store (the file, or the schema) on their first delivery."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(k)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err[-2000:] for _, err in outs]
    assert all(err == "" for _, err in outs), [err[-2000:] for _, err in outs]
    reports = [json.loads(out) for out, _ in outs]
    rows = {r.id: r for r in nbagent.list_sessions(db)}
    for report in reports:
        stored = nbagent.read_events(db, report["session"])
        assert len(stored) == report["events"] == rows[report["session"]].events
        check_invariants(stored)
        inserted = [
            m["id"] for e in stored if e.type == "agent/inbox/spliced" for m in e.data.get("inserted", ())
        ]
        assert inserted == report["delivered"]  # every delivery, once, in call order
        admitted = {e.data["id"] for e in stored if e.type == "user/message"}
        assert admitted == set(report["delivered"])  # every one reached the model
        assert rows[report["session"]].turns == 20
