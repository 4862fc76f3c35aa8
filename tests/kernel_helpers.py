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
    """The shell singleton with ``%load_ext nbagent``; call inside a running loop."""
    shell = InteractiveShell.instance()
    for name in ("__session__", "__vsc_ipynb_file__"):
        shell.user_ns.pop(name, None)
    if notebook is not None:
        shell.user_ns["__session__"] = str(notebook)
    shell.run_line_magic("load_ext", "nbagent")
    try:
        yield shell
    finally:
        shell.run_line_magic("unload_ext", "nbagent")


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


class Kernel:
    """A real ipykernel in ``cwd`` serving the notebook ``notebook`` (via ``JPY_SESSION_NAME``)."""

    def __init__(self, cwd: Path, notebook: str = "work.ipynb") -> None:
        import os

        from jupyter_client import KernelManager

        self.cwd = cwd
        env = {**os.environ, "JPY_SESSION_NAME": str(cwd / notebook)}
        env.pop("NBAGENT_DB", None)
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=str(cwd), env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 30) -> str:
        """Execute ``code``; return its stream, display and error text (display updates included)."""
        parts: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                parts.append(content["text"])
            elif kind in ("display_data", "execute_result", "update_display_data"):
                parts.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                parts.append(f"{content['ename']}: {content['evalue']}\n")

        self.kc.execute_interactive(code, timeout=timeout, output_hook=hook)
        return "".join(parts)

    def send(self, code: str) -> str:
        """Start executing ``code`` without waiting; returns the request's message id."""
        return self.kc.execute(code)

    def restart(self) -> None:
        """Kill the kernel at once (as a crash would) and start a fresh one."""
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=60)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
