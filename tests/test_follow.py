"""``nbagent.follow_events``: a reader following a session live as another process writes it, on
both stores (SPEC §6.5)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from eventtrace import run

import nbagent
import nbagent.store.follow
from nbagent import SessionNotFoundError

pytestmark = pytest.mark.stores

WRITER = """
import asyncio, sys, nbagent
async def main():
    agent = nbagent.resume_session(sys.argv[1], sys.argv[2])
    for turn in range(3):
        agent.inject(f"context {turn}")
        await agent.run(f"question {turn}")
    for i in range(25):
        agent.inject(f"note {i}")
    print(len(agent.events), flush=True)
    await agent.close()
asyncio.run(main())
"""


async def _collect(stream, into: list, until: asyncio.Event, count: list[int]) -> None:
    async for event in stream:
        into.append(event)
        if count and len(into) >= count[0]:
            until.set()


def test_a_follower_sees_each_event_of_another_process_once_in_order_as_it_commits(db, monkeypatch):
    # No periodic re-read: only the store's change signal (WAL counter, NOTIFY) can wake the follower.
    monkeypatch.setattr(nbagent.store.follow, "RESCAN_S", 3600.0)

    async def main():
        agent = nbagent.open_session(db)
        agent.inject("before anyone follows")
        await agent.close()
        sid = agent.session_id
        seen: list[nbagent.Event] = []
        target: list[int] = []
        done = asyncio.Event()
        follower = asyncio.create_task(_collect(nbagent.follow_events(db, sid), seen, done, target))
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(db), sid, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await writer.communicate()
        assert writer.returncode == 0
        target.append(int(out))
        if len(seen) < target[0]:
            await asyncio.wait_for(done.wait(), timeout=60)
        follower.cancel()
        stored = nbagent.read_events(db, sid)
        assert len(stored) == target[0]
        assert seen == list(stored)  # every event once, in seq order, as stored
        return sid, stored

    sid, stored = run(main())

    async def from_a_seq():
        tail = []
        async for event in nbagent.follow_events(db, sid, after=40):
            tail.append(event)
            if event.seq == stored[-1].seq:
                break
        assert tail == list(stored[41:])

    run(from_a_seq())


def test_following_a_session_that_is_not_there_says_so(db):
    async def main():
        await (nbagent.open_session(db)).close()
        with pytest.raises(SessionNotFoundError, match="no session nope"):
            async for _ in nbagent.follow_events(db, "nope"):
                pass

    run(main())


@pytest.mark.sqlite_only
def test_following_an_idle_file_creates_nothing_beside_it(db):
    async def main():
        agent = nbagent.open_session(db)
        agent.inject("a")
        agent.inject("b")
        await agent.close()
        before = sorted(os.listdir(db.parent))
        got = []
        async for event in nbagent.follow_events(db, agent.session_id):
            got.append(event)
            if len(got) == 2:
                break
        assert [e.seq for e in got] == [0, 1]
        assert sorted(os.listdir(db.parent)) == before

    run(main())
