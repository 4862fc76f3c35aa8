"""Run a notebook top to bottom in a real kernel (nbclient), honouring kernel-restart marks.

A cell tagged ``nbagent-restart-kernel`` makes the runner restart the kernel before that cell, the
way a reader of a tutorial would (Kernel → Restart). The kernel is told which notebook it serves
(``JPY_SESSION_NAME``), so the session file lands beside the notebook as in JupyterLab.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager

RESTART_TAG = "nbagent-restart-kernel"


def run_notebook(
    path: str | os.PathLike[str],
    *,
    timeout: int = 60,
    kernel_name: str = "python3",
    env: Mapping[str, str] | None = None,
    save: bool = True,
    on_cell: Callable[[Any], None] | None = None,
) -> Any:
    """Execute every code cell of the notebook at ``path`` in a fresh kernel; return the notebook.

    Cells tagged ``raises-exception`` may fail; any other failure raises ``CellExecutionError``.
    ``on_cell`` is called with each code cell once it has run (its outputs in place), and with each
    Markdown cell when the run reaches it (what a reader sees between outputs). With ``save``
    the executed notebook (outputs included) is written back to ``path``.
    """
    import nbformat
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient

    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    kernel_env = {**os.environ, "JPY_SESSION_NAME": str(path), **(env or {})}
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(path.parent)}},
        config=_local_transport(),
    )
    with client.setup_kernel(env=kernel_env):
        for index, cell in enumerate(nb.cells):
            if RESTART_TAG in cell.get("metadata", {}).get("tags", []):
                # inside setup_kernel both are set, and nbclient's default classes are the async ones
                km = cast("AsyncKernelManager", client.km)
                kc = cast("AsyncKernelClient", client.kc)
                run_sync(km.restart_kernel)(now=True)
                run_sync(kc.wait_for_ready)(timeout=timeout)
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
            if on_cell is not None and cell.cell_type in ("code", "markdown"):
                on_cell(cell)
    if save:
        nbformat.write(nb, path)
    return nb


def _local_transport() -> Any:
    """Kernel sockets as files in Jupyter's runtime folder (IPC) where the system has them: nothing
    travels over TCP, so the kernel has no "running over TCP without encryption" warning to print,
    a warning the reader of a headless run could do nothing about."""
    from traitlets.config import Config

    config = Config()
    if os.name == "posix":
        from jupyter_core.paths import jupyter_runtime_dir

        runtime = Path(jupyter_runtime_dir())
        runtime.mkdir(parents=True, exist_ok=True)
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(runtime / f"nbagent-{os.getpid()}-{uuid.uuid4().hex[:8]}-ipc")
    return config


def output_text(cell: Any) -> str:
    """All text a code cell shows: streams, plain-text results and displays, and errors."""
    parts: list[str] = []
    previous = None
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            # A print may reach the client in several pieces: glue pieces of one stream back together.
            if previous == out.get("name") and parts:
                parts[-1] += out.get("text", "")
            else:
                parts.append(out.get("text", ""))
            previous = out.get("name")
            continue
        previous = None
        if out.get("output_type") in ("display_data", "execute_result"):
            parts.append(out.get("data", {}).get("text/plain", ""))
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "\n".join(parts)
