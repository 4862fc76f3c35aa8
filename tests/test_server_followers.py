"""Followers at scale through a real Jupyter server process (issue #34): many tabs waiting on the
sessions of a team database cost the server its one listening connection and its pool (here of
one connection, as docs/hub-operators.md advises for a server), never a connection per tab; a
write from another process answers every waiting request."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import psycopg
import pytest

pytest.importorskip("jupyter_server")

from nbagent.store.postgres.lease import HOST

SESSIONS = 20
TABS = 2
"""Waiting requests per session (two tabs on each)."""
WRITER = """
import asyncio, sys, nbagent
async def main():
    for sid in sys.argv[2:]:
        agent = nbagent.resume_session(sys.argv[1], sid)
        agent.inject("a note from another kernel")
        await agent.close()
asyncio.run(main())
"""
OPENER = """
import asyncio, sys, nbagent
async def main():
    for _ in range(int(sys.argv[2])):
        agent = nbagent.open_session(sys.argv[1], model="echo")
        agent.inject("first")
        await agent.close()
        print(agent.session_id, flush=True)
asyncio.run(main())
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def jupyter_server(base: Path, env: dict[str, str]) -> Iterator[tuple[str, str, int]]:
    """A ``jupyter server`` process with nbagent's extension (this checkout's): (url, token, pid)."""
    config = base / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}})
    )
    root = base / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    checkout = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        **env,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "PYTHONPATH": os.pathsep.join([checkout, os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = (base / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"jupyter server did not start:\n{(base / 'server.log').read_text()[-3000:]}"
                )
            time.sleep(0.2)  # (waiting for a process to listen: no event to wait on)
        yield url, token, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def fetch(url: str, token: str, sid: str, **params: object) -> tuple[int, dict | None]:
    query = urlencode({"db": "NBAGENT_DB", "window": 20, **params, "token": token})
    try:
        with urllib.request.urlopen(f"{url}/nbagent/api/sessions/{sid}/timeline?{query}", timeout=90) as r:
            body = r.read()
            return r.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_many_waiting_tabs_cost_the_server_its_listener_and_pool(pg_cluster, pg_url, tmp_path) -> None:
    opened = subprocess.run(
        [sys.executable, "-c", OPENER, pg_url, str(SESSIONS)], capture_output=True, text=True, timeout=300
    )
    assert opened.returncode == 0, opened.stderr
    ids = opened.stdout.split()
    assert len(ids) == SESSIONS
    env = {"NBAGENT_DB": pg_url}  # the server sizes its own pool (c.NbagentServer.pool_size, default 1)
    with jupyter_server(tmp_path, env) as (url, token, pid):
        name = f"nbagent process {pid} on {HOST}"[:63]
        known = {}
        for sid in ids:
            status, bundle = fetch(url, token, sid)
            assert status == 200 and bundle is not None
            known[sid] = bundle["seq"]

        peak, listening, stop = [0], [0], threading.Event()

        def watch() -> None:
            with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
                while not stop.is_set():
                    rows = conn.execute(
                        "SELECT query FROM pg_stat_activity WHERE application_name = %s", (name,)
                    ).fetchall()
                    peak[0] = max(peak[0], len(rows))
                    listening[0] = max(listening[0], sum(r[0].startswith("LISTEN") for r in rows))
                    stop.wait(0.02)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        with ThreadPoolExecutor(SESSIONS * TABS) as pool:
            waits = [
                pool.submit(fetch, url, token, sid, known=known[sid], wait=30)
                for sid in ids
                for _ in range(TABS)
            ]
            writer = subprocess.run(
                [sys.executable, "-c", WRITER, pg_url, *ids], capture_output=True, text=True, timeout=300
            )
            assert writer.returncode == 0, writer.stderr
            answers = [w.result(timeout=120) for w in waits]
        stop.set()
        watcher.join()

    for (status, bundle), sid in zip(answers, [s for s in ids for _ in range(TABS)], strict=True):
        assert status == 200 and bundle is not None, (status, bundle)
        assert bundle["seq"] > known[sid] and "a note from another kernel" in json.dumps(bundle)
    if (
        os.environ.get("NBAGENT_TEST_PGBOUNCER") != "1"
    ):  # (behind PgBouncer the pooler's backends are counted)
        assert peak[0] <= 2, f"{peak[0]} connections for {SESSIONS * TABS} waiting tabs"
        assert listening[0] == 1
