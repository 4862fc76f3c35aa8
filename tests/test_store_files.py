"""Odd files and odd arguments at the store's door (SPEC §6.1, §6.3): special files, leftover
write-ahead logs, newer schemas hidden in a ``-wal``, damage the cheap checks must see at resume.
Every refusal leaves the file, its ``-wal`` and its ``-shm`` byte-identical."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filestate import snapshot

import nbagent
from nbagent.models import ScriptedModel

ENTRY_POINTS = """
import asyncio, json, sys, nbagent
path = sys.argv[1]
async def main():
    out = {}
    for name, call in [
        ("open_session", lambda: nbagent.open_session(path)),
        ("resume_session", lambda: nbagent.resume_session(path)),
        ("list_sessions", lambda: nbagent.list_sessions(path)),
        ("read_events", lambda: nbagent.read_events(path, "x")),
    ]:
        try:
            result = call()
        except Exception as exc:
            out[name] = [type(exc).__name__, str(exc)]
        else:
            if hasattr(result, "close"):
                await result.close()
            out[name] = ["ok", ""]
    print(json.dumps(out))
asyncio.run(main())
"""


def entry_points_in_a_child(path: Path) -> dict[str, list[str]]:
    """Each entry point's outcome on ``path``, run in a child (a hang fails, it cannot stall the suite)."""
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_POINTS, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_fifo_at_the_session_path_is_refused_without_blocking(tmp_path: Path) -> None:
    """Each entry point used to block forever in open(2) on the FIFO."""
    fifo = tmp_path / "s.nbagent.sqlite"
    os.mkfifo(fifo)
    try:
        outcomes = entry_points_in_a_child(fifo)
    except subprocess.TimeoutExpired:
        pytest.fail("an entry point blocked on the FIFO")
    for name, (kind, message) in outcomes.items():
        assert kind == "SessionFileError", (name, kind, message)
        assert str(fifo) in message and "FIFO" in message, (name, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.nbagent.sqlite"]


def test_an_empty_session_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.nbagent.sqlite"

    async def main() -> None:
        for bad in ("", "   "):
            with pytest.raises(ValueError, match="session_id must be a non-empty str"):
                nbagent.open_session(path, session_id=bad, model=ScriptedModel([]))

    asyncio.run(main())
    assert nbagent.list_sessions(path) == []
    assert not path.exists()
    assert snapshot(path) == {"main": None, "-wal": None, "-shm": None}
