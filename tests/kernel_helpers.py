"""Helpers for the notebook tests: an in-process IPython shell with the extension loaded, real kernels
(ipykernel 7 in this interpreter, ipykernel 6 in the interpreter scripts/test.sh prepares), sending a
whole notebook at once as Run All does, and reading a session file the way another process would."""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from nbagent.log.events import Event

IPYKERNEL6_PYTHON = os.environ.get("NBAGENT_IPYKERNEL6_PYTHON") or str(
    Path(__file__).resolve().parent.parent / "build" / "ipykernel6" / "bin" / "python"
)


def _has_ipykernel6() -> bool:
    return Path(IPYKERNEL6_PYTHON).exists()


KERNELS = [
    pytest.param(None, id="ipykernel7"),
    pytest.param(
        IPYKERNEL6_PYTHON,
        id="ipykernel6",
        marks=pytest.mark.skipif(
            not _has_ipykernel6(),
            reason=f"no ipykernel 6 interpreter at {IPYKERNEL6_PYTHON}: scripts/test.sh makes it "
            "(or set NBAGENT_IPYKERNEL6_PYTHON)",
        ),
    ),
]
"""Parametrize a test with ``kernel_python`` over both ipykernel majors."""


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


def _kernel_spec_manager(python: str) -> Any:
    """A kernel spec manager that knows one kernel, ``nbagent-test``, run by ``python``."""
    from jupyter_client.kernelspec import KernelSpecManager

    root = Path(tempfile.mkdtemp(prefix="nbagent-kernelspec-"))
    (root / "nbagent-test").mkdir()
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nbagent test kernel",
        "language": "python",
    }
    (root / "nbagent-test" / "kernel.json").write_text(json.dumps(spec))
    return KernelSpecManager(kernel_dirs=[str(root)])


@dataclass
class Received:
    """One message from the kernel and when it arrived (``time.monotonic()``)."""

    at: float
    msg: dict[str, Any]

    @property
    def type(self) -> str:
        return self.msg["msg_type"]

    @property
    def parent(self) -> str | None:
        return self.msg["parent_header"].get("msg_id")

    @property
    def content(self) -> dict[str, Any]:
        return self.msg["content"]


@dataclass
class RunAll:
    """What sending a list of cells at once gave back: each request id, the replies in arrival order,
    and every IOPub message."""

    ids: list[str]
    replies: list[Received] = field(default_factory=list)
    iopub: list[Received] = field(default_factory=list)

    def reply(self, index: int) -> dict[str, Any]:
        return next(r.content for r in self.replies if r.parent == self.ids[index])

    def outputs(self, index: int) -> list[Received]:
        return [m for m in self.iopub if m.parent == self.ids[index]]

    def text(self, index: int) -> str:
        """Stream, display and error text of cell ``index`` (display updates it received included)."""
        return "".join(_text(m) for m in self.outputs(index))

    def display_ids(self, index: int) -> list[str]:
        return [
            m.content["transient"]["display_id"]
            for m in self.outputs(index)
            if m.type == "display_data" and m.content.get("transient", {}).get("display_id")
        ]

    def updates(self, display_id: str) -> list[Received]:
        """Every ``update_display_data`` for ``display_id``, whatever request it was stamped with."""
        return [
            m
            for m in self.iopub
            if m.type == "update_display_data"
            and m.content.get("transient", {}).get("display_id") == display_id
        ]

    def window(self, index: int) -> tuple[float, float]:
        """When cell ``index`` went busy and idle again (the kernel's own status messages)."""
        states = [(m.at, m.content["execution_state"]) for m in self.outputs(index) if m.type == "status"]
        busy = next(at for at, state in states if state == "busy")
        idle = next(at for at, state in states if state == "idle")
        return busy, idle


def _text(m: Received) -> str:
    if m.type == "stream":
        return m.content["text"]
    if m.type in ("display_data", "execute_result", "update_display_data"):
        return m.content["data"].get("text/plain", "") + "\n"
    if m.type == "error":
        return f"{m.content['ename']}: {m.content['evalue']}\n"
    return ""


class Kernel:
    """A real ipykernel in ``cwd`` serving the notebook ``notebook`` (via ``JPY_SESSION_NAME``).

    ``python`` runs the kernel (this interpreter by default; ``KERNELS`` gives the ipykernel 6 one).
    """

    def __init__(self, cwd: Path, notebook: str = "work.ipynb", *, python: str | None = None) -> None:
        from jupyter_client import KernelManager

        self.cwd = cwd
        env = {**os.environ, "JPY_SESSION_NAME": str(cwd / notebook)}
        env.pop("NBAGENT_DB", None)
        if python is None:
            self.km = KernelManager(kernel_name="python3")
        else:
            self.km = KernelManager(
                kernel_name="nbagent-test", kernel_spec_manager=_kernel_spec_manager(python)
            )
        self.km.start_kernel(cwd=str(cwd), env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        version = "import ipykernel; print(ipykernel.__version__)"
        self.version = self.run(version, store_history=False).strip()  # leaves In [1] to the test

    def run(
        self, code: str, timeout: float = 120, *, store_history: bool = True, answers: list[str] | None = None
    ) -> str:
        """Execute ``code``; return its stream, display and error text (display updates included).
        ``answers`` are typed, in order, to the kernel's ``input()`` prompts (which are collected
        into the text)."""
        parts: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                parts.append(content["text"])
            elif kind in ("display_data", "execute_result", "update_display_data"):
                parts.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                parts.append(f"{content['ename']}: {content['evalue']}\n")

        def stdin_hook(msg: dict[str, Any]) -> None:
            parts.append(msg["content"]["prompt"] + "\n")
            if not answers:
                raise AssertionError(f"the kernel asked {msg['content']['prompt']!r} and no answer was given")
            self.kc.input(answers.pop(0))

        stdin = {} if answers is None else {"allow_stdin": True, "stdin_hook": stdin_hook}
        self.kc.execute_interactive(
            code, store_history=store_history, timeout=timeout, output_hook=hook, **stdin
        )
        return "".join(parts)

    def send(self, code: str) -> str:
        """Start executing ``code`` without waiting; returns the request's message id."""
        return self.kc.execute(code)

    def run_all(self, codes: list[str], timeout: float = 120, *, stop_on_error: bool = True) -> RunAll:
        """Send every code at once with ``stop_on_error=True`` (JupyterLab's Run All), without waiting
        between them; then collect every reply and IOPub message until each request is idle again."""
        result = RunAll([self.kc.execute(code, stop_on_error=stop_on_error) for code in codes])
        self.collect(result, timeout)
        return result

    def collect(self, result: RunAll, timeout: float = 120) -> None:
        """Read replies and IOPub messages into ``result`` until every request has replied and gone idle."""
        pending_idle = set(result.ids)
        deadline = time.monotonic() + timeout
        while pending_idle or len(result.replies) < len(result.ids):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(result.replies)} of {len(result.ids)} replies after {timeout}s; "
                    f"{len(pending_idle)} requests not idle"
                )
            try:
                msg = self.kc.iopub_channel.get_msg(timeout=0.05)
            except queue.Empty:
                pass
            else:
                got = Received(time.monotonic(), msg)
                result.iopub.append(got)
                if got.type == "status" and got.content["execution_state"] == "idle":
                    pending_idle.discard(got.parent)
            while True:
                try:
                    reply = self.kc.shell_channel.get_msg(timeout=0)
                except queue.Empty:
                    break
                result.replies.append(Received(time.monotonic(), reply))

    def wait_for_stream(self, msg_id: str, text: str, timeout: float = 120) -> None:
        """Read IOPub until request ``msg_id`` has printed ``text``."""
        deadline = time.monotonic() + timeout
        seen = ""
        while text not in seen:
            msg = self.kc.iopub_channel.get_msg(timeout=max(0.01, deadline - time.monotonic()))
            if msg["msg_type"] == "stream" and msg["parent_header"].get("msg_id") == msg_id:
                seen += msg["content"]["text"]

    def wait_idle(self, msg_id: str, timeout: float = 120) -> None:
        """Read IOPub until the kernel reports idle for request ``msg_id``."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.kc.iopub_channel.get_msg(timeout=max(0.01, deadline - time.monotonic()))
            if (
                msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
                and msg["parent_header"].get("msg_id") == msg_id
            ):
                return

    def alive(self) -> bool:
        return self.km.is_alive() and self.run("print(6 * 7)").strip() == "42"

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


def wait_for_events(db: Path, event_type: str, count: int = 1, timeout: float = 120) -> list[Event]:
    """Poll the session file ``db``, as another reader would, until it holds ``count`` events of
    ``event_type``; return them all (a deadline, not a sleep, bounds the wait)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            events = read_events(db)
        except Exception:  # the file or its first session row is not written yet
            events = []
        if sum(e.type == event_type for e in events) >= count:
            return events
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} {event_type} in {db} after {timeout}s")


@pytest.fixture(params=KERNELS)
def loaded_kernel(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    """A real kernel with the extension loaded, on ipykernel 7 and on ipykernel 6 (test modules use
    it as their ``kernel`` fixture: ``kernel = kernel_helpers.loaded_kernel``)."""
    with Kernel(tmp_path, python=request.param) as k:
        k.run("%load_ext nbagent")
        yield k


def work_db(k: Kernel) -> Path:
    """The session file a notebook's default session writes beside it (``work.ipynb``'s)."""
    return k.cwd / "work.nbagent.sqlite"


def wait_for(k: Kernel, event_type: str, count: int = 1, timeout: float = 120) -> list[Event]:
    """:func:`wait_for_events` on ``k``'s session file."""
    return wait_for_events(work_db(k), event_type, count, timeout)
