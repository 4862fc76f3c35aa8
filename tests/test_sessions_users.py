"""``nbagent sessions list URL --user NAME`` and ``--all-users`` on a real PostgreSQL (issue #34):
one schema per user, as docs/hub-operators.md recommends — named by the user's role setting, or
owned by the user — listed by user, most recent first."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import psycopg

import nbagent
from nbagent.store.postgres.location import with_schema


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbagent", *args], capture_output=True, text=True, timeout=120
    )


async def _sessions(url: str, prompts: list[str]) -> list[str]:
    ids = []
    for prompt in prompts:
        agent = nbagent.open_session(url, model="echo", title=prompt)
        await agent.run(prompt)
        await agent.close()
        ids.append(agent.session_id)
    return ids


def test_sessions_are_listed_by_user_and_for_all_users(pg_cluster) -> None:
    tag = f"{os.getpid()}"
    alice, bob, carol = f"alice_{tag}", f"bob_{tag}", f"carol_{tag}"
    url = pg_cluster.url()
    with psycopg.connect(url, autocommit=True) as conn:
        for role in (alice, bob, carol):
            conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"ALTER ROLE {alice} SET nbagent.schema = 'u_{alice}'")  # as the guide says
    a_ids = asyncio.run(_sessions(with_schema(url, f"u_{alice}"), ["alice one", "alice two"]))
    b_ids = asyncio.run(_sessions(with_schema(url, f"u_{bob}"), ["bob one"]))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ALTER SCHEMA u_{bob} OWNER TO {bob}")  # no role setting: the owner's
        conn.execute(f"CREATE SCHEMA other_{tag}")  # another application's tables are not listed
        conn.execute(f"CREATE TABLE other_{tag}.meta (key text)")
    # tables of nbagent's names whose meta names another application are that application's
    asyncio.run(_sessions(with_schema(url, f"app_{tag}"), ["not nbagent's any more"]))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"UPDATE app_{tag}.meta SET value = 'someone-else' WHERE key = 'application'")

    mine = cli("sessions", "list", url, "--user", alice)
    assert mine.returncode == 0, mine.stderr
    lines = mine.stdout.splitlines()
    assert [ln.split()[0] for ln in lines[::2]] == [a_ids[1], a_ids[0]]  # most recent first
    assert "alice two" in lines[0] and f"schema u_{alice}" in lines[1]
    assert bob not in mine.stdout

    theirs = cli("sessions", "list", url, "--user", bob)
    assert theirs.returncode == 0, theirs.stderr
    assert theirs.stdout.split()[0] == b_ids[0] and f"schema u_{bob}" in theirs.stdout

    nobody = cli("sessions", "list", url, "--user", carol)
    assert nobody.returncode == 1 and nobody.stdout == ""
    assert f"belongs to {carol!r}" in nobody.stderr and alice in nobody.stderr and bob in nobody.stderr

    every = cli("sessions", "list", url, "--all-users")
    assert every.returncode == 0, every.stderr
    lines = every.stdout.splitlines()
    assert lines[0].split() == ["user", "session"]
    users = {ln.split()[1]: ln.split()[0] for ln in lines[1::2]}
    assert {users[s] for s in a_ids} == {alice} and users[b_ids[0]] == bob
    order = [ln.split()[1] for ln in lines[1::2]]
    assert order.index(b_ids[0]) < order.index(a_ids[1]) < order.index(a_ids[0])  # newest first, across users
    assert f"other_{tag}" not in every.stdout and "other_" not in every.stderr
    assert f"app_{tag}" not in every.stdout + every.stderr

    with_glob = cli("sessions", "list", url, "--all-users", "--notebook", "/nowhere/*")
    assert with_glob.returncode == 0 and with_glob.stdout.startswith("nbagent: no sessions in")


def test_by_user_needs_a_postgresql_url(tmp_path) -> None:
    done = cli("sessions", "list", str(tmp_path / "x.nbagent.sqlite"), "--all-users")
    assert done.returncode == 1 and "lists the schemas of a postgresql:// URL" in done.stderr
    both = cli("sessions", "list", "postgresql:///x", "--all-users", "--user", "a")
    assert both.returncode == 2 and "not allowed with" in both.stderr
