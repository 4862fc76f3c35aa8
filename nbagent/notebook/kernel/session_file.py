"""Where a kernel's session file lives: ``<notebook stem>.nbagent.sqlite`` beside the notebook (SPEC §9.5).

The notebook's path comes from the kernel's session variables (JupyterLab, Notebook 7, VS Code and
``nbagent quickstart`` set one). ``jupyter nbconvert --execute``, ``jupyter execute`` and papermill
set none, but name the notebook on their own command line and start the kernel in the notebook's
folder: a kernel takes its notebook from there when that is unambiguous
(:mod:`nbagent.notebook.kernel.runs`, Linux). Otherwise the kernel does not know its notebook and uses the shared
``nbagent.sqlite`` of its working directory, where it never resumes a session on its own (see
``KernelSession.ensure``), so two notebooks never share one session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nbagent.store.location import SqliteLocation, StoreLocation, parse_location

FALLBACK_NAME = "nbagent.sqlite"
SUFFIX = ".nbagent.sqlite"


def notebook_path(
    user_ns: Mapping[str, Any], environ: Mapping[str, str], cwd: Path, runner: Path | None = None
) -> Path | None:
    """The notebook this kernel serves, if the kernel was told: ``__vsc_ipynb_file__`` (VS Code),
    ``__session__`` (IPython, from Jupyter's session) or ``JPY_SESSION_NAME``; else ``runner``, the
    notebook named by the process that started the kernel (:mod:`nbagent.notebook.kernel.runs`).

    Jupyter gives the path relative to the server's root, while the kernel usually runs in the
    notebook's own folder; a relative path is therefore tried against the working directory first and
    otherwise reduced to its file name there.
    """
    for raw in (
        user_ns.get("__vsc_ipynb_file__"),
        user_ns.get("__session__"),
        environ.get("JPY_SESSION_NAME"),
    ):
        if not isinstance(raw, str) or not raw.strip():
            continue
        raw = raw.strip()
        if raw.startswith("file://"):
            raw = raw[len("file://") :]
        path = Path(raw).expanduser()
        if path.suffix != ".ipynb":
            continue  # a console or a non-notebook session: no notebook to sit beside
        if path.is_absolute():
            return path
        joined = cwd / path
        return joined if joined.parent.is_dir() and joined.exists() else cwd / path.name
    return runner


def session_file(
    user_ns: Mapping[str, Any],
    *,
    override: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    runner: Path | None = None,
) -> StoreLocation:
    """The session store for this kernel: ``override`` (``%agent --db``), ``NBAGENT_DB``, the file beside
    the notebook (``runner``: see :func:`notebook_path`), or ``nbagent.sqlite`` in the working
    directory, in that order. ``override`` and ``NBAGENT_DB`` may be a ``postgresql://`` URL (SPEC §6.5)."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    chosen = override or environ.get("NBAGENT_DB")
    if chosen:
        return parse_location(chosen, cwd=cwd)
    notebook = notebook_path(user_ns, environ, cwd, runner)
    if notebook is None:
        return SqliteLocation(cwd / FALLBACK_NAME)
    return SqliteLocation(notebook.with_name(notebook.stem + SUFFIX))
