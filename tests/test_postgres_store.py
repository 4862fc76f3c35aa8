"""The PostgreSQL store itself: its schema, refusing what is not nbagent's, credentials, damaged logs,
and a server restarted under a live session (SPEC §6.5). The shared behaviour runs in the core
suites on both stores (the ``db`` parameter)."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote

import pg_server
import psycopg
import pytest
from eventtrace import run, trace

import nbagent
from nbagent import (
    SessionCorruptError,
    SessionFileError,
    SessionNotFoundError,
    SessionWriteError,
)
from nbagent.models import ScriptedModel
from nbagent.store.postgres.tables import SCHEMA_VERSION
from nbagent.testing import check_invariants

PASSWORD = "s3cret-Pa55word"


def schema_of(url: str) -> str:
    return url.rsplit("nbagent.schema%3D", 1)[1]


def snapshot(cluster: pg_server.Cluster, schema: str) -> list[tuple]:
    """Every relation of ``schema`` with its rows, and the list of schemas: what "unchanged" means."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        out: list[tuple] = [tuple(r[0] for r in conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1"))]
        rels = conn.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s ORDER BY 1",
            (schema,),
        ).fetchall()
        out.append(tuple(rels))
        for name, kind in rels:
            if kind in ("r", "v"):
                rows = conn.execute(
                    psycopg.sql.SQL("SELECT * FROM {}.{} ORDER BY 1").format(
                        psycopg.sql.Identifier(schema), psycopg.sql.Identifier(name)
                    )
                ).fetchall()
                out.append((name, tuple(map(tuple, rows))))
        return out


def sql(cluster: pg_server.Cluster, statement: str, args: tuple = ()) -> list[tuple]:
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []


def test_first_use_creates_the_schema_with_its_version_and_stores_events_verbatim(pg_cluster, pg_url):
    schema = schema_of(pg_url)

    async def main():
        assert nbagent.list_sessions(pg_url) == []  # a reader creates nothing
        assert sql(pg_cluster, "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)) == []
        agent = nbagent.open_session(pg_url, title="t", notebook="n.ipynb")
        agent.inject("x")
        await agent.close()
        return agent

    agent = run(main())
    assert dict(sql(pg_cluster, f'SELECT key, value FROM "{schema}".meta')) == {
        "application": "nbagent",
        "version": str(SCHEMA_VERSION),
    }
    assert sql(pg_cluster, f'SELECT id, title, notebook, model FROM "{schema}".sessions') == [
        (agent.session_id, "t", "n.ipynb", "echo")
    ]
    ((seq, type_, data, pending),) = sql(
        pg_cluster, f'SELECT seq, type, data::text, inbox_pending FROM "{schema}".events'
    )
    assert (seq, type_, pending) == (0, "agent/inbox/spliced", 1)
    assert data == nbagent._json.dumps(agent.events[0].data)  # the exact text nbagent wrote
    assert agent.path == nbagent.list_sessions(pg_url)[0].file
    assert agent.path.startswith("postgresql://postgres@") and f"(schema {schema})" in agent.path


def test_a_schema_holding_other_tables_is_refused_and_left_unchanged(pg_cluster, pg_url):
    schema = schema_of(pg_url)
    sql(pg_cluster, f'CREATE SCHEMA "{schema}"')
    sql(pg_cluster, f'CREATE TABLE "{schema}".notes (body text)')
    sql(pg_cluster, f'CREATE VIEW "{schema}".recent AS SELECT body FROM "{schema}".notes')
    sql(pg_cluster, f"INSERT INTO \"{schema}\".notes VALUES ('mine')")
    before = snapshot(pg_cluster, schema)

    async def main():
        for attempt in (
            lambda: nbagent.open_session(pg_url),
            lambda: nbagent.resume_session(pg_url),
            lambda: nbagent.list_sessions(pg_url),
            lambda: nbagent.read_events(pg_url, "x"),
        ):
            with pytest.raises(
                SessionFileError, match=r"holds tables that are not nbagent's \(notes, recent\)"
            ):
                attempt()

    run(main())
    assert snapshot(pg_cluster, schema) == before


def test_another_applications_meta_and_a_newer_version_are_refused(pg_cluster, pg_url):
    schema = schema_of(pg_url)

    async def main():
        await (nbagent.open_session(pg_url)).close()

    run(main())
    sql(
        pg_cluster,
        f"UPDATE \"{schema}\".meta SET value = %s WHERE key = 'version'",
        (str(SCHEMA_VERSION + 1),),
    )
    before = snapshot(pg_cluster, schema)

    async def newer():
        with pytest.raises(SessionFileError, match=f"version {SCHEMA_VERSION + 1}, newer"):
            nbagent.open_session(pg_url)
        with pytest.raises(SessionFileError, match="newer"):
            nbagent.list_sessions(pg_url)

    run(newer())
    assert snapshot(pg_cluster, schema) == before
    sql(pg_cluster, f"UPDATE \"{schema}\".meta SET value = 'someone-else' WHERE key = 'application'")

    async def foreign():
        with pytest.raises(SessionFileError, match="belongs to another application"):
            nbagent.resume_session(pg_url)

    run(foreign())


def test_resume_in_an_empty_database_says_there_is_no_session(pg_url):
    async def main():
        with pytest.raises(SessionNotFoundError, match="holds no session"):
            nbagent.resume_session(pg_url)

    run(main())


def test_credentials_come_from_pgpass_or_pg_variables_and_are_never_shown_or_stored(
    pg_cluster, pg_url, tmp_path, monkeypatch, caplog
):
    schema = schema_of(pg_url)
    sql(pg_cluster, f"CREATE ROLE alice LOGIN PASSWORD '{PASSWORD}'")
    sql(pg_cluster, "GRANT CREATE ON DATABASE postgres TO alice")
    options = "options=" + quote(f"-c nbagent.schema={schema}", safe="")
    tcp = f"127.0.0.1:{pg_cluster.port}"
    caplog.set_level(logging.DEBUG)
    shown: list[str] = []
    seen: list[str] = []

    async def use(url: str) -> None:
        agent = nbagent.open_session(url)
        agent.inject("hello")
        shown.extend([agent.path, *(r.file for r in nbagent.list_sessions(url))])
        seen.append(repr(agent))
        await agent.close()

    # 1. A password in the URL.
    run(use(f"postgresql://alice:{PASSWORD}@{tcp}/postgres?{options}"))
    # 2. The PG* variables, with a URL naming only the schema.
    with monkeypatch.context() as env:
        for k, v in dict(PGHOST="127.0.0.1", PGPORT=str(pg_cluster.port), PGUSER="alice").items():
            env.setenv(k, v)
        env.setenv("PGPASSWORD", PASSWORD)
        run(use(f"postgresql:///postgres?{options}"))
    # 3. A password file (~/.pgpass, or the file PGPASSFILE names).
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_cluster.port}:*:alice:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    run(use(f"postgresql://alice@{tcp}/postgres?{options}"))
    monkeypatch.delenv("PGPASSFILE")

    async def wrong():
        with pytest.raises(SessionFileError, match="password authentication failed") as info:
            nbagent.open_session(f"postgresql://alice:not-{PASSWORD}@{tcp}/postgres?{options}")
        seen.append(str(info.value))
        with pytest.raises(SessionFileError, match="unexpected spaces") as info:  # libpq quotes the URL
            nbagent.open_session(f"postgresql://alice:{PASSWORD} x@{tcp}/postgres?{options}")
        seen.append(str(info.value))

    run(wrong())
    assert len(nbagent.list_sessions(pg_url)) == 3
    assert {s.split(" (schema")[0] for s in shown} == {
        f"postgresql://alice@127.0.0.1:{pg_cluster.port}/postgres"
    }
    stored = sql(pg_cluster, f'SELECT s::text FROM "{schema}".sessions s')
    stored += sql(pg_cluster, f'SELECT e::text FROM "{schema}".events e')
    stored += sql(pg_cluster, f'SELECT m::text FROM "{schema}".meta m')
    everything = "\n".join([*shown, *seen, *(r[0] for r in stored), caplog.text])
    assert PASSWORD not in everything


def test_a_gap_or_an_impossible_record_is_named_by_seq(pg_cluster, pg_url):
    schema = schema_of(pg_url)

    async def main():
        agent = nbagent.open_session(pg_url)
        await agent.run("hello")
        await agent.close()
        return agent

    agent = run(main())
    chunk = next(e.seq for e in agent.events if e.type == "assistant/chunk")
    sql(pg_cluster, f'DELETE FROM "{schema}".events WHERE seq = %s', (chunk,))

    async def gap():
        with pytest.raises(SessionCorruptError, match=f"seq {chunk} is missing"):
            nbagent.read_events(pg_url, agent.session_id)
        with pytest.raises(SessionCorruptError, match=f"seq {chunk} is missing"):
            resumed = nbagent.resume_session(pg_url)  # checks continuity, or finds the gap on reading
            try:
                resumed.events  # noqa: B018
            finally:
                await resumed.close()

    run(gap())
    # A record must be JSON: the server itself refuses anything else.
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        sql(pg_cluster, f"UPDATE \"{schema}\".events SET data = '{{broken' WHERE seq = 0")
    sql(pg_cluster, f'DELETE FROM "{schema}".events WHERE seq > %s', (chunk - 1,))
    sql(
        pg_cluster,
        f"INSERT INTO \"{schema}\".events VALUES (%s, %s, 0, 'agent/inbox/spliced', %s, NULL)",
        (agent.session_id, chunk, '{"target":"next-step","start":5,"removed_count":1,"inserted":[]}'),
    )

    async def impossible():
        with pytest.raises(SessionCorruptError, match=f"seq {chunk}"):
            nbagent.resume_session(pg_url)

    run(impossible())


class Gated:
    """A model whose answer waits for ``gate`` (so the server can be restarted mid-turn)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()

    async def __call__(self, request):
        self.waiting.set()
        await self.gate.wait()
        return "answered after the restart"


def test_a_session_outlives_a_server_restart_mid_turn_and_a_server_that_is_down_for_a_while(tmp_path):
    """SPEC §6.5: writes raise while the server is down; the next write after it is back succeeds
    without reopening the session, and nothing acknowledged is lost."""
    reason = pg_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with pg_server.Cluster(fsync=True) as cluster:
        url = cluster.url()

        async def main():
            gated = Gated()
            agent = nbagent.open_session(url, model=ScriptedModel([gated, "fine again"]))
            errors: list[dict] = []
            agent.on("error", lambda n: errors.append(n.error))
            agent.inject("kept context")
            agent.followup("go")
            await gated.waiting.wait()
            cluster.restart()  # every pooled connection dies; the turn's next write gets a fresh one
            gated.gate.set()
            r = await agent.run("continue")
            assert r.text == "fine again" and not errors
            assert [t for t in trace(agent.events) if t.startswith("TE")] == [
                "TE 1 completed",
                "TE 2 completed",
            ]
            # Down for a while: the delivery raises and records nothing; once back, it goes through.
            confirmed = list(agent.events)
            cluster.pg_ctl("stop", "-m", "fast")
            with pytest.raises(SessionWriteError, match="lost the connection to postgresql://") as info:
                agent.inject("not recorded")
            assert "need not be reopened" in str(info.value) and list(agent.events) == confirmed
            cluster.pg_ctl("start")
            agent.inject("recorded once it is back")
            check_invariants(agent.events, inbox=agent.inbox)
            acknowledged = list(agent.events)
            await agent.close()
            again = nbagent.resume_session(url, agent.session_id)
            assert list(again.events) == acknowledged
            assert "recorded once it is back" in trace(again.events)[-1]
            await again.close()

        run(main())


@pytest.mark.parametrize("stored", [True, False], ids=["committed", "not-committed"])
async def test_a_write_whose_connection_died_before_its_answer_is_looked_up_not_doubled(pg_url, stored):
    """The connection dies around the append: the store looks the batch up on a fresh connection;
    a stored batch is done, one not stored is written again: either way exactly once."""
    from nbagent.store.postgres import store as postgres

    agent = nbagent.open_session(pg_url)
    agent.inject("before")
    store = agent._file
    real = store.run
    cut = []

    def dies_once(fn, *, doing="reading"):
        if doing.startswith("writing") and not cut:
            cut.append(doing)
            if stored:
                real(fn, doing=doing)  # committed; the answer is lost
            raise postgres._LostError("lost the connection (a test)", stalled=False)
        return real(fn, doing=doing)

    store.run = dies_once
    agent.inject("around the cut")
    store.run = real
    agent.inject("after")
    assert cut and trace(agent.events) == [
        "INS ns 0 ['before']",
        "INS ns 1 ['around the cut']",
        "INS ns 2 ['after']",
    ]
    await agent.close()
    again = nbagent.resume_session(pg_url, agent.session_id)
    assert list(again.events) == list(agent.events)
    await again.close()
