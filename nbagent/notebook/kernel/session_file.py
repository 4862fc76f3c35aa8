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
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nbagent.store.location import PostgresLocation, SqliteLocation, StoreLocation, parse_location

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


def relative_file(location: StoreLocation, cwd: Path) -> str | None:
    """``location``'s file relative to ``cwd`` with ``/`` separators; ``None`` for PostgreSQL."""
    if not isinstance(location, SqliteLocation):
        return None
    try:
        return Path(os.path.relpath(location.path, cwd)).as_posix()
    except ValueError:  # another drive (Windows)
        return None


def file_failure(location: StoreLocation, exc: BaseException) -> str:
    """One line for a session file (or PostgreSQL URL) that cannot be used: where, why and the way
    out, each once."""
    if isinstance(location, PostgresLocation):  # shown and explained without its password
        from nbagent.redaction import scrub

        shown = location.shown
        why = scrub(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        where = "" if shown in why else f"nbagent cannot use the session store {shown}: "
        return f"{where}{why}; or choose another store with `%agent --db PATH_OR_URL`"
    path = location.path
    if path.is_dir():
        why = "it is a folder, not a file"
    elif path.parent.exists() and not path.parent.is_dir():
        why = f"{shown_store(path.parent)} is a file, not a folder"
    elif not path.parent.exists():
        why = f"its folder {path.parent} does not exist (nbagent creates the file, never folders)"
    elif not os.access(path.parent if path.parent.exists() else Path.cwd(), os.W_OK):
        why = "its folder is not writable"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror.lower()
    else:
        why = _reason(path, exc)
    return (
        f"nbagent cannot use the session file {path}: {why}; choose another with `%agent --db PATH` "
        "(or the NBAGENT_DB environment variable)"
    )


_STORE_ADVICE = re.compile(r"\s*[—;]\s*(pass another path|make it writable|remove them or pass).*$")


def _reason(path: Path, exc: BaseException) -> str:
    """The store's own words for why ``path`` failed, without repeating the path or its advice
    (which speaks of the Python API: this line gives the notebook's way out)."""
    said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    said = _STORE_ADVICE.sub("", said)
    said = re.sub(r"\s*\(?or pass another path\)?", "", said)
    for prefix in (f"{path} ", f"{shown_store(path)} "):
        if said.startswith(prefix):
            return "it " + said.removeprefix(prefix)
    return said


def shown_store(where: StoreLocation | Path) -> str:
    """A file relative to the working directory when it is inside it (a URL without credentials)."""
    if isinstance(where, PostgresLocation):
        return where.shown
    path = where.path if isinstance(where, SqliteLocation) else where
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
