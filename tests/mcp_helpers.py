"""Helpers for the MCP tests: the test servers in ``tests/mcp_servers``, finding their processes by a
tag on their command line (``/proc``), and a streamable HTTP server on a free port of 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).resolve().parent / "mcp_servers"
DEMO = str(SERVERS / "demo.py")
SILENT = str(SERVERS / "silent.py")
BROKEN = str(SERVERS / "broken.py")
TASKS = str(SERVERS / "tasks.py")


def new_tag() -> str:
    """A unique command-line word that marks the processes of one test."""
    return f"nbagent-test-{uuid.uuid4().hex[:12]}"


def pids_with(tag: str) -> list[int]:
    """Live processes whose command line holds ``tag`` (zombies count as gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(predicate: Any, timeout: float = 120.0, what: str = "the condition") -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def http_demo(*, sse: bool = False, token: str | None = None) -> Iterator[str]:
    """The demo server over streamable HTTP (or HTTP+SSE), wanting ``Authorization: Bearer TOKEN``
    when ``token`` is given; yields its URL and stops it afterwards."""
    port = free_port()
    argv = [sys.executable, DEMO, "--sse" if sse else "--http", str(port)]
    if token is not None:
        argv += ["--token", token]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _accepts(port) or proc.poll() is not None, what="the HTTP demo server listening")
        assert proc.poll() is None, "the HTTP demo server exited at start"
        yield f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def outcomes(events: Any) -> dict[str, tuple[str, bool, str | None]]:
    """call id → (the result's text, is_error, error code) for every ``tool/result``."""
    out = {}
    for event in events:
        if event.type != "tool/result":
            continue
        (block,) = event.data["message"]["content"]
        text = "".join(b.get("text", "") for b in block["content"] if b["type"] == "text")
        code = (event.data.get("error") or {}).get("code")
        out[block["tool_call_id"]] = (text, bool(block["is_error"]), code)
    return out
