"""The PostgreSQL writer lease without a session (SPEC §6.5): a row with an expiry and a fencing token.

A frozen writer keeps its lease until it runs out, then loses it to the next opener and can never
append again; a killed writer on this host gives it up at once; a version-1 schema is upgraded by
its first writer. The same tests run directly and through PgBouncer in transaction mode.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psycopg
import pytest
from eventtrace import run, trace

import nbagent
from nbagent import SessionLockedError
from nbagent.testing import check_invariants

LEASE_S = 3
WRITER = """
import asyncio, sys, nbagent
async def main():
    url = sys.argv[1]
    agent = nbagent.open_session(url)
    agent.inject("from the first writer")
    print(agent.session_id, flush=True)
    for line in sys.stdin:
        try:
            agent.inject(line.strip())
            print("appended", flush=True)
        except nbagent.SessionLockedError as exc:
            print("locked", exc, flush=True)
asyncio.run(main())
"""


@pytest.fixture(params=["direct", "pgbouncer"])
def url(request, pg_cluster):
    schema = f"lease{os.getpid()}_{request.node.name.__hash__() & 0xFFFFFF}"
    if request.param == "pgbouncer":
        return request.getfixturevalue("pg_bouncer").url(schema=schema)
    return pg_cluster.url(schema=schema)


def lease_row(cluster, url: str, sid: str) -> tuple:
    """``(token, pid, seconds until it runs out, whether it has run out)`` on the server's clock."""
    schema = url.rsplit("nbagent.schema%3D", 1)[1]
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        return conn.execute(
            f"SELECT token, pid, extract(epoch FROM expires_at - clock_timestamp()), "
            f'expires_at < clock_timestamp() FROM "{schema}".leases WHERE session_id = %s',
            (sid,),
        ).fetchone()


def start_writer(url: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "NBAGENT_PG_LEASE_SECONDS": str(LEASE_S)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    return proc, proc.stdout.readline().strip()


async def test_a_frozen_writer_loses_its_lease_when_it_runs_out_and_can_never_append_again(pg_cluster, url):
    proc, sid = start_writer(url)
    try:
        proc.send_signal(signal.SIGSTOP)
        token, pid, left, expired = lease_row(pg_cluster, url, sid)
        assert pid == proc.pid and 0 < left <= LEASE_S and not expired  # the bound: its length
        with pytest.raises(SessionLockedError, match=rf"process {proc.pid} on .*runs out in \d+ s"):
            nbagent.resume_session(url, sid)
        while not lease_row(pg_cluster, url, sid)[3]:  # wait for the server's clock, not a sleep
            pg_cluster_wait(pg_cluster)
        agent = nbagent.resume_session(url, sid)  # the first try after it ran out succeeds
        assert lease_row(pg_cluster, url, sid)[0] == token + 1
        agent.inject("from the second writer")
        proc.send_signal(signal.SIGCONT)
        proc.stdin.write("after the takeover\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()
        assert answer.startswith("locked") and "no longer this agent's to write" in answer, answer
        assert f"process {os.getpid()}" in answer  # it names the new holder
        agent.inject("still the second writer's")
        check_invariants(agent.events, inbox=agent.inbox)
        events = list(agent.events)
        await agent.close()
        assert trace(events) == [
            "INS ns 0 ['from the first writer']",
            "INS ns 1 ['from the second writer']",
            'INS ns 2 ["still the second writer\'s"]',
        ]
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()


def pg_cluster_wait(cluster) -> None:
    """Let the server's clock move on: one round trip that sleeps on the server for 50 ms."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute("SELECT pg_sleep(0.05)")


async def test_a_killed_writer_on_this_host_gives_its_lease_up_at_once(pg_cluster, url):
    proc, sid = start_writer(url)
    proc.kill()
    proc.wait()
    token, pid, _, expired = lease_row(pg_cluster, url, sid)
    assert pid == proc.pid and not expired
    agent = nbagent.resume_session(url, sid)  # no waiting for the lease to run out
    assert lease_row(pg_cluster, url, sid)[0] == token + 1
    agent.inject("resumed at once")
    await agent.close()
    assert lease_row(pg_cluster, url, sid) is None  # a clean close gives the lease up


async def test_two_live_writers_of_one_session_in_two_processes_never_both_write(pg_cluster, url):
    proc, sid = start_writer(url)
    try:
        for _ in range(3):
            with pytest.raises(SessionLockedError, match=f"process {proc.pid}"):
                nbagent.resume_session(url, sid)
        proc.stdin.write("still mine\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "appended"
    finally:
        proc.kill()
        proc.wait()


def test_a_version_1_schema_gets_its_leases_table_from_its_first_writer(pg_cluster, pg_url):
    async def make() -> str:
        agent = nbagent.open_session(pg_url)
        agent.inject("written under version 1")
        await agent.close()
        return agent.session_id

    sid = run(make())
    schema = pg_url.rsplit("nbagent.schema%3D", 1)[1]
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:  # as version 1 left it
        conn.execute(f'DROP TABLE "{schema}".leases')
        conn.execute(f"UPDATE \"{schema}\".meta SET value = '1' WHERE key = 'version'")
    assert [s.id for s in nbagent.list_sessions(pg_url)] == [sid]
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:  # a reader changes nothing
        assert conn.execute(f"SELECT value FROM \"{schema}\".meta WHERE key = 'version'").fetchone() == ("1",)

    async def resume() -> None:
        agent = nbagent.resume_session(pg_url, sid)
        agent.inject("written under version 2")
        await agent.close()
        assert len(agent.events) == 2

    run(resume())
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        assert conn.execute(f"SELECT value FROM \"{schema}\".meta WHERE key = 'version'").fetchone() == ("2",)
