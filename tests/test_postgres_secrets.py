"""PostgreSQL URLs with a password (issue 17, item 7): ``nbagent transcript URL`` reads a session as
every other entry point does and never prints the password; after ``%agent --db`` with a wrong
password or an unreachable server, ``%agent status`` says what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from kernel_helpers import Kernel

import nbagent

PASSWORD = "tr4nscript-Pa55"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbagent", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def dave(pg_cluster, pg_url) -> str:
    """The URL (password included) of a fresh schema for a role that logs in with a password."""
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'dave'").fetchone() is None:
            conn.execute(f"CREATE ROLE dave LOGIN PASSWORD '{PASSWORD}'")
            conn.execute("GRANT CREATE ON DATABASE postgres TO dave")
    options = pg_url.rsplit("&options=", 1)[1]
    return f"postgresql://dave:{PASSWORD}@127.0.0.1:{pg_cluster.port}/postgres?options={options}"


def test_nbagent_transcript_reads_a_session_from_a_postgresql_url(dave) -> None:
    async def record() -> str:
        agent = nbagent.open_session(dave, model="echo")
        await agent.run("which currency?")
        await agent.close()
        return agent.session_id

    import asyncio

    session_id = asyncio.run(record())
    done = cli("transcript", dave, "--session", session_id[:8])
    assert done.returncode == 0, done.stderr
    assert "which currency?" in done.stdout
    assert "postgresql\\://dave<!---->@127.0.0.1:" in done.stdout  # escaped Markdown: no autolink
    assert PASSWORD not in done.stdout + done.stderr


@pytest.mark.parametrize("problem", ["wrong password", "unreachable", "unknown session"])
def test_nbagent_transcript_never_prints_the_password_in_an_error(dave, pg_cluster, problem) -> None:
    url = {
        "wrong password": dave.replace(PASSWORD, PASSWORD + "x"),
        "unreachable": f"postgresql://dave:{PASSWORD}@127.0.0.1:1/postgres",
        "unknown session": dave,
    }[problem]
    done = cli("transcript", url, "--session", "ffffffff")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("nbagent transcript: ")
    assert "postgresql://dave@127.0.0.1:" in done.stderr
    assert PASSWORD not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.kernel
@pytest.mark.parametrize("problem", ["wrong password", "unreachable"])
def test_status_after_a_db_url_that_cannot_be_used_says_why(tmp_path: Path, dave, problem) -> None:
    url = {
        "wrong password": dave.replace(PASSWORD, "not-the-password"),
        "unreachable": f"postgresql://dave:{PASSWORD}@127.0.0.1:1/postgres",
    }[problem]
    with Kernel(tmp_path) as k:
        outputs = [k.run("%load_ext nbagent"), k.run(f"%agent --db {url}")]
        outputs.append(k.run("%agent status"))
        outputs.append(k.run("%followup hello"))
        outputs.append(k.run("%agent status"))
        assert k.run("print(6 * 7)") == "42\n"
    shown = "postgresql://dave@127.0.0.1:"
    for out in outputs[2:]:
        assert "AttributeError" not in out and "Traceback" not in out
        assert shown in out
    assert all(PASSWORD not in out and "not-the-password" not in out for out in outputs), outputs
