"""Shared test helpers for session files: byte snapshots (with -wal/-shm) and unprivileged runs."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path


def snapshot(path: Path) -> dict[str, str | None]:
    """The bytes (as hashes) of a file and its -wal/-shm; ``None`` for an absent one."""
    out: dict[str, str | None] = {}
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{path}{suffix}")
        out[suffix or "main"] = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
    return out


def freeze_with_wal(build: Path, dest: Path) -> None:
    """Copy the SQLite database at ``build`` with its live -wal/-shm to ``dest``, as a crashed
    writer leaves it: committed frames in a -wal that was never checkpointed."""
    for suffix in ("", "-wal", "-shm"):
        shutil.copyfile(f"{build}{suffix}", f"{dest}{suffix}")


def wal_database(path: Path, statements: list[str]) -> sqlite3.Connection:
    """A WAL-mode SQLite database at ``path`` after ``statements``; the connection stays open."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    for statement in statements:
        conn.execute(statement)
    return conn


def run_unprivileged(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child that imports nbagent, then drops to user ``nobody`` when root.

    nbagent loads its public names on first use: the child loads them all before it drops (the
    user ``nobody`` may not be able to read the interpreter's packages)."""
    prelude = (
        "import os, asyncio, nbagent, nbagent.store.sqlite.store\n"
        "[getattr(nbagent, name) for name in nbagent.__all__]\n"
        "if os.geteuid() == 0:\n"
        "    os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
    )
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60)


def crashed_copy(dest: Path, scratch: Path, *, statements: tuple[str, ...] = ()) -> Path:
    """A session file at ``dest`` as a writer killed mid-session leaves it: committed frames in a
    -wal that was never checkpointed, and its -shm. It is written in ``scratch`` (created) by a
    real agent on a thread of its own; ``statements`` run on the live file first (WAL mode)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import nbagent
    from nbagent.models import ScriptedModel

    scratch.mkdir()
    live = scratch / dest.name

    async def write() -> None:
        agent = nbagent.open_session(live, model=ScriptedModel(["answer 0", "answer 1"]))
        for i in range(2):
            agent.inject(f"context {i}")
            await agent.run(f"prompt {i}")
        if statements:
            conn = sqlite3.connect(live, isolation_level=None)
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            for statement in statements:
                conn.execute(statement)
            conn.close()
        for suffix in ("", "-wal", "-shm"):
            shutil.copyfile(f"{live}{suffix}", f"{dest}{suffix}")
        await agent.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, write()).result()
    return dest
