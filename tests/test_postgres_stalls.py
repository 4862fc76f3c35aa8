"""PostgreSQL calls always finish (SPEC §5.6, §6.4): a foreign table lock or a server that stops
answering fails ``inject()``, ``cancel()`` and ``close()`` in bounded time with an error naming the
server, and a writer's own stale backend left behind by a silent partition does not keep its lease."""

from __future__ import annotations

import asyncio
import itertools
import os
from urllib.parse import quote

import psycopg
import pytest
from eventtrace import run, trace
from tcp_proxy import StallingProxy

import nbagent
from nbagent import NbagentError, SessionWriteError
from nbagent.store.postgres import watchdog as pg_watchdog
from nbagent.store.postgres.store import PostgresStore
from nbagent.testing import check_invariants

PASSWORD = "stall-Pa55word"
BOUND_S = 120
"""A generous bound for calls that must fail or finish (far above every timeout in play)."""
_roles = itertools.count()


def schema_of(url: str) -> str:
    return url.rsplit("nbagent.schema%3D", 1)[1]


def new_role(cluster) -> str:
    """A login role with a password that may create the schema (not a superuser)."""
    role = f"stall_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"GRANT CREATE ON DATABASE postgres TO {role}")
    return role


def tcp_url(cluster, schema: str, port: int, *settings: str, role: str | None = None) -> str:
    """A password-authenticated TCP URL on ``port`` (for a new role unless ``role`` is given)."""
    role = role or new_role(cluster)
    options = quote(" ".join([f"-c nbagent.schema={schema}", *(f"-c {s}" for s in settings)]), safe="")
    return f"postgresql://{role}:{PASSWORD}@127.0.0.1:{port}/postgres?options={options}"


def names_the_server(error: BaseException, port: int) -> bool:
    text = str(error)
    return f"@127.0.0.1:{port}/postgres" in text and PASSWORD not in text


async def both(*calls) -> list[object]:
    """Run each call on a thread of its own at once; their results or exceptions, within the bound."""
    return await asyncio.wait_for(
        asyncio.gather(*(asyncio.to_thread(c) for c in calls), return_exceptions=True), BOUND_S
    )


def test_a_store_bounds_statements_locks_and_dead_peers_by_default(pg_cluster, pg_url):
    schema, role = schema_of(pg_url), new_role(pg_cluster)
    store = PostgresStore(tcp_url(pg_cluster, schema, pg_cluster.port, role=role), mode="create")
    try:
        shown = store.run(
            lambda c: [
                c.execute(f"SHOW {name}").fetchone()[0]
                for name in (
                    "statement_timeout",
                    "lock_timeout",
                    "tcp_keepalives_idle",
                    "tcp_keepalives_count",
                )
            ]
        )
        assert shown == ["20s", "10s", "5", "3"]
        params = store.run(lambda c: c.info.get_parameters())
        assert params["keepalives_idle"] == "5" and params["tcp_user_timeout"] == "10000"
    finally:
        store.close()
    # A setting the URL gives wins.
    store = PostgresStore(
        tcp_url(pg_cluster, schema, pg_cluster.port, "lock_timeout=1500", role=role), mode="write"
    )
    try:
        assert store.run(lambda c: c.execute("SHOW lock_timeout").fetchone()[0]) == "1500ms"
    finally:
        store.close()


def test_a_foreign_table_lock_fails_inject_cancel_and_close_in_bounded_time(pg_cluster, pg_url, monkeypatch):
    monkeypatch.setattr(pg_watchdog, "LOCK_TIMEOUT_MS", 1000)
    schema = schema_of(pg_url)
    url = tcp_url(pg_cluster, schema, pg_cluster.port)

    async def main() -> str:
        agent = nbagent.open_session(url)
        agent.inject("before the lock")
        with psycopg.connect(pg_cluster.url()) as holder:  # a transaction holding the table
            holder.execute(f'LOCK TABLE "{schema}".events IN ACCESS EXCLUSIVE MODE')
            failures = await both(lambda: agent.inject("during the lock"), agent.cancel)
            for failure in failures:
                assert isinstance(failure, SessionWriteError), failures
                assert names_the_server(failure, pg_cluster.port) and "lock timeout" in str(failure)
            await asyncio.wait_for(agent.close(), BOUND_S)
            holder.rollback()
        assert agent.status == "closed"
        return agent.session_id

    sid = run(main())

    async def after() -> None:
        agent = nbagent.resume_session(url, sid)
        assert trace(agent.events) == ["INS ns 0 ['before the lock']"]
        await agent.close()

    run(after())


def test_a_server_that_stops_answering_fails_inject_and_cancel_and_close_finishes(pg_cluster, pg_url):
    schema = schema_of(pg_url)
    with StallingProxy(pg_cluster.port) as proxy:
        url = tcp_url(pg_cluster, schema, proxy.port, "statement_timeout=1000")

        async def main() -> None:
            agent = nbagent.open_session(url)
            agent.inject("before the stall")
            proxy.stall()
            failures = await both(lambda: agent.inject("during the stall"), agent.cancel)
            for failure in failures:
                assert isinstance(failure, NbagentError), failures
                assert names_the_server(failure, proxy.port) and "lost the connection" in str(failure)
            # The call that holds a connection when the proxy stalls is cut by the watchdog ("no
            # answer for 6 s"). When the lease renewer took the pool's open connection first (a busy
            # machine starts the threads late), both calls wait for the pool instead, which cannot
            # open a new connection through the stall, and fail after its 5 s wait: as bounded, and
            # as clear to the user.
            said = ("no answer for 6 s", "couldn't get a connection after")
            assert any(any(s in str(f) for s in said) for f in failures), failures
            await asyncio.wait_for(agent.close(), BOUND_S)
            assert agent.status == "closed"

        run(main())


def test_a_writers_own_stale_backend_does_not_keep_the_lease_after_a_silent_partition(pg_cluster, pg_url):
    """The lease is a row, not the stalled connection's lock: a lease of this very process that no
    live agent of it holds is taken at once (it used to wait for the server's keepalive, up to 2 h)."""
    schema = schema_of(pg_url)
    direct = tcp_url(pg_cluster, schema, pg_cluster.port, "statement_timeout=1000")
    with StallingProxy(pg_cluster.port) as proxy:
        through_proxy = direct.replace(f":{pg_cluster.port}/", f":{proxy.port}/")

        async def partitioned() -> str:
            agent = nbagent.open_session(through_proxy)
            agent.inject("before the partition")
            proxy.stall()
            with pytest.raises(SessionWriteError, match="lost the connection"):
                await asyncio.wait_for(asyncio.to_thread(agent.inject, "lost"), BOUND_S)
            await asyncio.wait_for(agent.close(), BOUND_S)
            return agent.session_id

        sid = run(partitioned())

        async def resumed() -> None:
            agent = nbagent.resume_session(direct, sid)
            assert trace(agent.events)[:1] == ["INS ns 0 ['before the partition']"]
            with pytest.raises(nbagent.SessionLockedError, match=f"process {os.getpid()}"):
                nbagent.resume_session(direct, sid)  # a live lease of this process still refuses
            agent.inject("after the partition")
            check_invariants(agent.events, inbox=agent.inbox)
            await agent.close()

        run(resumed())
