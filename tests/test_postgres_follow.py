"""Following PostgreSQL sessions at scale (SPEC §6.5): every follower of a process shares one
listening connection per server and one bounded rescan; none holds a connection of its own."""

from __future__ import annotations

import asyncio
import os
import sys

import psycopg

import nbagent
import nbagent.store.follow
from nbagent.store.postgres import listen as pg_listen
from nbagent.store.postgres import pool as pg_pool
from nbagent.store.postgres.lease import holder_name
from nbagent.store.postgres.store import PostgresStore

SESSIONS = 20
WRITER = """
import asyncio, sys, nbagent
async def main():
    for sid in sys.argv[2:]:
        agent = nbagent.resume_session(sys.argv[1], sid)
        for i in range(3):
            agent.inject(f"note {i}")
        await agent.close()
asyncio.run(main())
"""


async def _follow(url: str, sid: str, want: int) -> list[int]:
    seqs: list[int] = []
    async for event in nbagent.follow_events(url, sid):
        seqs.append(event.seq)
        if len(seqs) == want:
            return seqs
    return seqs


def backends_of_this_process(cluster) -> int:
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (holder_name(),)
        ).fetchone()[0]


def listening_backends(cluster) -> int:
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND query LIKE 'LISTEN%%'",
            (holder_name(),),
        ).fetchone()[0]


async def _open_sessions(url: str) -> list[str]:
    ids = []
    for _ in range(SESSIONS):
        agent = nbagent.open_session(url)
        agent.inject("first")
        await agent.close()
        ids.append(agent.session_id)
    return ids


async def test_many_followers_share_one_listening_connection_and_the_process_pool(pg_cluster, pg_url):
    # Earlier tests' pools (other schemas, so other pools) may still hold idle connections of this
    # process: counted before, and left out of what this test's followers add.
    earlier = backends_of_this_process(pg_cluster) - listening_backends(pg_cluster)
    ids = await _open_sessions(pg_url)
    followers = [asyncio.create_task(_follow(pg_url, sid, 4)) for sid in ids]
    store = PostgresStore(pg_url)
    listener = pg_listen.listener_for(store)
    while len(listener.ready_sessions()) < SESSIONS:
        await asyncio.sleep(0.01)
    during = backends_of_this_process(pg_cluster)
    listening = listening_backends(pg_cluster)
    writer = await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, pg_url, *ids)
    assert await writer.wait() == 0
    seen = await asyncio.wait_for(asyncio.gather(*followers), 120)
    assert seen == [[0, 1, 2, 3]] * SESSIONS  # every event once, in order, for every follower
    # One LISTEN connection for all twenty followers (none behind a transaction pooler: they rescan).
    assert listening == (0 if listener.listen_conninfo is None else 1)
    assert during - earlier <= 1 + pg_pool.pool_size()  # the listener and the pool: nothing per follower


async def test_followers_go_on_after_their_listening_connection_is_cut(pg_cluster, pg_url, monkeypatch):
    monkeypatch.setattr(nbagent.store.follow, "RESCAN_S", 0.5)
    ids = await _open_sessions(pg_url)
    followers = [asyncio.create_task(_follow(pg_url, sid, 4)) for sid in ids]
    listener = pg_listen.listener_for(PostgresStore(pg_url))
    while len(listener.ready_sessions()) < SESSIONS:
        await asyncio.sleep(0.01)
    before = listener.connections
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
            "AND query LIKE 'LISTEN%%'",
            (holder_name(),),
        )
    if os.environ.get("NBAGENT_TEST_PGBOUNCER") != "1":  # behind PgBouncer nothing listens: rescans only
        # The listener opens a new connection of its own (RETRY_S after it saw the cut). Waited for
        # before writing: followers served by the rescan alone could finish, and the listener close
        # its connection, before that.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while listener.connections == before and loop.time() < deadline:
            await asyncio.sleep(0.01)
        assert listener.connections == before + 1
    writer = await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, pg_url, *ids)
    assert await writer.wait() == 0
    seen = await asyncio.wait_for(asyncio.gather(*followers), 120)
    assert seen == [[0, 1, 2, 3]] * SESSIONS
