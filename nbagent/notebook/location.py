"""Where a kernel's session file lives: ``<notebook stem>.nbagent.sqlite`` beside the notebook (SPEC §9.5)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nbagent.pg_location import is_postgres_url

FALLBACK_NAME = "nbagent.sqlite"
SUFFIX = ".nbagent.sqlite"


def notebook_path(user_ns: Mapping[str, Any], environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The notebook this kernel serves, if the kernel was told: ``__vsc_ipynb_file__`` (VS Code),
    ``__session__`` (IPython, from Jupyter's session) or ``JPY_SESSION_NAME``.

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
    return None


def session_file(
    user_ns: Mapping[str, Any],
    *,
    override: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path:
    """The session file for this kernel: ``override`` (``%agent --db``), ``NBAGENT_DB``, the file beside
    the notebook, or ``nbagent.sqlite`` in the working directory, in that order."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    chosen = override or environ.get("NBAGENT_DB")
    if is_postgres_url(chosen):
        return chosen  # type: ignore[return-value]  # a postgresql:// URL selects that store (SPEC §6.5)
    if chosen:
        path = Path(chosen).expanduser()
        return path if path.is_absolute() else cwd / path
    notebook = notebook_path(user_ns, environ, cwd)
    if notebook is None:
        return cwd / FALLBACK_NAME
    return notebook.with_name(notebook.stem + SUFFIX)
