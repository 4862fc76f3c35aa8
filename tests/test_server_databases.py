"""The lab extension's REST API over a team's PostgreSQL store (issue #34): the server names its
databases (``c.NbagentServer.databases``), the page asks by name only, every endpoint the tab uses
answers for them, a follower waits for the next change through the process's one listener, and a
database that stops answering fails the request in bounded time. Through pytest-jupyter's real
Jupyter server, over sessions written by real agents on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")
import server_client
from lab_sessions import write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from server_client import API
from tcp_proxy import StallingProxy

import nbagent
import nbagent.store.follow
from nbagent.labserver import handlers
from nbagent.labserver.databases import Databases
from nbagent.store.postgres import listen as pg_listen

get = server_client.get
PASSWORD = "lab-Pa55word-34"
DATABASES = ("nbagent", "api", "databases")
_roles = itertools.count()


def password_role(cluster) -> str:
    """A login role with a password that may create its schema (not a superuser)."""
    role = f"lab_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"GRANT CREATE ON DATABASE postgres TO {role}")
    return role


def tcp_url(cluster, schema: str, port: int, role: str, *settings: str) -> str:
    options = quote(" ".join([f"-c nbagent.schema={schema}", *(f"-c {s}" for s in settings)]), safe="")
    return f"postgresql://{role}:{PASSWORD}@127.0.0.1:{port}/postgres?options={options}"


@pytest.fixture
def team(pg_cluster, pg_url) -> str:
    """The URL of the database served as ``team``: a password-authenticated TCP URL of a fresh schema."""
    schema = pg_url.rsplit("nbagent.schema%3D", 1)[1]
    return tcp_url(pg_cluster, schema, pg_cluster.port, password_role(pg_cluster))


@pytest.fixture
def proxy(pg_cluster):
    with StallingProxy(pg_cluster.port) as p:
        yield p


@pytest.fixture
def slow(pg_cluster, pg_url, proxy) -> str:
    """A database reached through a proxy that can stop forwarding, with a 1 s statement timeout
    (so the watchdog cuts a call left unanswered after 6 s)."""
    schema = pg_url.rsplit("nbagent.schema%3D", 1)[1] + "_slow"
    return tcp_url(pg_cluster, schema, proxy.port, password_role(pg_cluster), "statement_timeout=1000")


@pytest.fixture
def jp_server_config(team: str, slow: str) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}},
        "NbagentServer": {
            "databases": {"team": team, "slow": slow, "bad name!": team, "notaurl": "/tmp/x.sqlite"},
            "serve_nbagent_db": False,
        },
    }


def no_secret(*answers: Any) -> None:
    for answer in answers:
        text = answer if isinstance(answer, str) else json.dumps(answer)
        assert PASSWORD not in text and "127.0.0.1" not in text and "postgresql://" not in text, text


def test_the_server_serves_its_databases_by_name_with_the_endpoints_of_files(team: str, get: Any) -> None:
    first = write_session(team, ["Which region sells most?"], context="Prices in EUR.")
    second = write_session(team, ["First question", "Second question"], title="Sales")

    assert get(*DATABASES) == (200, [{"name": "slow"}, {"name": "team"}])  # never a URL; bad ones left out

    status, rows = get(*API, db="team")
    assert status == 200
    assert [(r["db"], r["file"], r["id"]) for r in rows] == [
        ("team", "team", second),
        ("team", "team", first),
    ]
    assert rows[0]["label"] == "Sales" and rows[1]["label"] == "Which region sells most?"
    assert rows[0]["turns"] == 2 and rows[1]["model"] == "echo"
    status, page = get(*API, db="team", limit=1)
    assert status == 200 and [r["id"] for r in page] == [second]

    stored = nbagent.read_events(team, second)
    status, events = get(*API, second, "events", db="team", after=2, limit=5)
    assert status == 200 and [e["seq"] for e in events] == [3, 4, 5, 6, 7]
    assert events[0]["data"] == stored[3].data

    status, window = get(*API, second, "timeline", db="team", window=1)
    assert status == 200 and window["first_turn"] == 2 and window["log_seq"] == len(stored)
    assert get(*API, second, "timeline", db="team", window=1, known=window["seq"])[0] == 204
    status, earlier = get(*API, second, "timeline", db="team", window=1, before=2)
    assert status == 200 and earlier["first_turn"] == 1
    status, found = get(*API, second, "timeline", db="team", find="second")
    assert status == 200 and found["matches"] == [{"turn": 2, "title": "Second question"}]
    status, bundle = get(*API, second, "timeline", db="team")
    assert status == 200 and bundle["seq"] == len(stored)
    status, text = get(*API, first, "transcript", db="team", format="md")
    assert status == 200 and "Which region sells most?" in text and "*team · session" in text
    status, plan = get(*API, second, "plan", db="team")
    assert status == 200 and plan["turns"] == [1, 2]
    status, diff = get(*API, second, "diff", db="team")
    assert status == 200 and diff["diff"] is None  # not a fork: said, no error
    # What the page asks after a kernel restart for a live cell of a database's session (its
    # bundle names no file): each database the server serves, the one holding it answers.
    status, cell = get(*API, second, "timeline", db="team", turn=2, output="cell", headline="followup")
    assert status == 200 and cell["application/vnd.nbagent.timeline+json"]["nodes"][0]["id"] == "turn-2"
    assert "Second question" in cell["text/plain"]
    no_secret(rows, events, window, bundle, text, plan, diff, cell)


def test_an_unknown_name_is_404_and_a_url_is_refused(team: str, get: Any) -> None:
    sid = write_session(team, ["hello"])
    status, body = get(*API, db="nope")
    assert status == 404 and "no database named 'nope'" in body["message"] and "slow, team" in body["message"]
    for url in (team, "postgresql://evil@10.0.0.1/x", "host=10.0.0.1 dbname=x"):
        status, body = get(*API, db=url)
        assert status == 400 and "never a URL" in body["message"]
        status, body = get(*API, sid, "timeline", db=url, window=5)
        assert status == 400
        no_secret(body)
    status, body = get(*API, "0" * 32, "timeline", db="team", window=5)
    assert status == 404 and "database 'team'" in body["message"]
    no_secret(body)
    # wait= is a database follower's: a file, or a window that is not the newest, is refused
    status, body = get(*API, sid, "timeline", db="team", window=5, before=1, known=3, wait=1)
    assert status == 422 and "wait=S" in body["message"]


def _run(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    asyncio.set_event_loop(loop)
    return loop.run_until_complete(coro)


WRITER = """
import asyncio, sys, nbagent
async def main():
    agent = nbagent.resume_session(sys.argv[1], sys.argv[2])
    agent.inject("a note from another kernel")
    await agent.close()
asyncio.run(main())
"""


def test_a_waiting_follower_gets_another_process_write_through_the_listener(
    team: str, jp_fetch: Any, jp_asyncio_loop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No rescan within the test's bound: the answer can only come from the write's NOTIFY.
    monkeypatch.setattr(nbagent.store.follow, "RESCAN_S", 600.0)
    sid = write_session(team, ["hello"])
    params = {"db": "team", "window": "20"}

    async def timeline(**extra: str) -> Any:
        return await jp_fetch(*API, sid, "timeline", params={**params, **extra})

    first = json.loads(_run(jp_asyncio_loop, timeline()).body)
    known = str(first["seq"])
    # Nothing moves: the wait ends with 204 after the seconds asked for, not before.
    began = time.monotonic()
    assert _run(jp_asyncio_loop, timeline(known=known, wait="1")).code == 204
    assert time.monotonic() - began >= 1.0

    async def scenario() -> tuple[Any, float]:
        waiting = asyncio.ensure_future(timeline(known=known, wait="30"))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while not any(sid in lst.ready_sessions() for lst in pg_listen._listeners.values()):
            assert loop.time() < deadline and not waiting.done(), "the request never waited"
            await asyncio.sleep(0.01)
        writer = await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, team, sid)
        assert await writer.wait() == 0
        written = loop.time()
        answer = await asyncio.wait_for(waiting, 60)
        return answer, loop.time() - written

    answer, after = _run(jp_asyncio_loop, scenario())
    bundle = json.loads(answer.body)
    assert answer.code == 200 and bundle["seq"] > first["seq"]
    assert "a note from another kernel" in json.dumps(bundle)
    assert after < 30  # the notice woke it (the rescan would take 600 s)


def test_a_database_that_stops_answering_fails_the_request_in_bounded_time(
    slow: str, proxy: StallingProxy, get: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = write_session(slow, ["hello"])
    assert [r["id"] for r in get(*API, db="slow")[1]] == [sid]
    proxy.stall()
    monkeypatch.setattr(handlers, "ANSWER_S", 2.0)
    began = time.monotonic()
    status, body = get(*API, sid, "timeline", db="slow", window=5)
    assert status == 504 and time.monotonic() - began < 15
    assert body["message"] == "database 'slow' did not answer within 2 s; try again once it is back"
    # Given longer, the store's own bound (the watchdog, statement timeout + 5 s) answers, naming it.
    monkeypatch.setattr(handlers, "ANSWER_S", 120.0)
    began = time.monotonic()
    status, body = get(*API, db="slow")
    assert status == 503 and time.monotonic() - began < 60
    assert "database 'slow'" in body["message"] and "try again once the server" in body["message"]
    no_secret(body)
    # The files' reads never waited for it.
    assert get(*API, path="")[0] == 200


def test_the_server_sizes_its_own_pool_and_leaves_its_kernels_theirs(monkeypatch) -> None:
    from types import SimpleNamespace

    from traitlets.config import Config

    from nbagent.store.postgres import pool as pg_pool

    monkeypatch.delenv("NBAGENT_PG_POOL_SIZE", raising=False)
    assert pg_pool.pool_size() == pg_pool.POOL_SIZE  # a kernel's
    Databases.from_config(SimpleNamespace(config=Config(), log=None))
    assert pg_pool.pool_size() == 1
    assert "NBAGENT_PG_POOL_SIZE" not in os.environ  # what the kernels it starts inherit
    config = Config()
    config.NbagentServer.pool_size = 3
    Databases.from_config(SimpleNamespace(config=config, log=None))
    assert pg_pool.pool_size() == 3
