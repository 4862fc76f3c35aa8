"""Helpers for the notebook tests: an in-process IPython shell with the extension loaded inside a
running asyncio loop, and reading a session file the way another process would."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from nbagent.events import Event


@contextmanager
def ipython_shell(notebook: Path | None = None) -> Iterator[InteractiveShell]:
    """The shell singleton with ``%load_ext nbagent.notebook``; call inside a running loop."""
    shell = InteractiveShell.instance()
    for name in ("__session__", "__vsc_ipynb_file__"):
        shell.user_ns.pop(name, None)
    if notebook is not None:
        shell.user_ns["__session__"] = str(notebook)
    shell.run_line_magic("load_ext", "nbagent.notebook")
    try:
        yield shell
    finally:
        shell.run_line_magic("unload_ext", "nbagent.notebook")


def magics(shell: InteractiveShell) -> Any:
    return shell.magics_manager.registry["AgentMagics"]


def read_events(path: Path, session_id: str | None = None) -> list[Event]:
    """Every event of one session (the most recently created when no id), read with plain sqlite3."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if session_id is None:
            session_id = conn.execute("SELECT id FROM sessions ORDER BY created_at DESC LIMIT 1").fetchone()[
                0
            ]
        rows = conn.execute(
            "SELECT seq, time, type, data FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
    finally:
        conn.close()
    import json

    return [Event(seq, time, type_, json.loads(data)) for seq, time, type_, data in rows]


def session_ids(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY created_at")]
    finally:
        conn.close()
