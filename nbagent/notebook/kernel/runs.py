"""How this kernel is being run: by a batch runner (nbconvert, ``jupyter execute``, papermill,
nbclient) or behind a front end, which notebook the runner named, and which run it is (SPEC §9.5).

A batch runner starts the kernel itself, so the kernel reads the runner's command line from ``/proc``
(Linux) to find the notebook it executes. A run has no front end when its execute requests forbid
standard input (nbclient, which every batch runner uses, sends ``allow_stdin: false``; JupyterLab,
Notebook 7, VS Code and ``jupyter console`` allow it). One run is one runner process: a kernel it
restarts mid-run belongs to the same run, so it continues that run's session.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTINUE_ENV = "NBAGENT_SESSION"
"""``NBAGENT_SESSION=continue`` makes a run without a front end continue the file's latest session."""


@dataclass(frozen=True)
class Runner:
    """The process that started this kernel, when it is a batch runner nbagent knows."""

    how: str
    """How the notebook is run, as a user would type it: ``jupyter nbconvert --execute``."""
    notebooks: tuple[Path, ...]
    """The notebooks named on its command line (absolute)."""
    output: str | None
    """The output name it was given (``--output run1.ipynb``; papermill's output notebook)."""


# Options whose value is the next argument (``--output x`` as well as ``--output=x``), per runner.
_NBCONVERT_VALUES = frozenset(
    {"--output", "--output-dir", "--to", "--template", "--template-file", "--writer", "--post", "--config"}
    | {"--log-level", "--reveal-prefix", "--nbformat", "--theme", "--ExecutePreprocessor.kernel_name"}
)
_EXECUTE_VALUES = frozenset({"--output", "--kernel_name", "--timeout", "--startup_timeout", "--log-level"})
_PAPERMILL_VALUES = frozenset(
    {"-f", "--parameters_file", "-y", "--parameters_yaml", "-b", "--parameters_base64", "-k", "--kernel"}
    | {"-l", "--language", "--cwd", "--engine", "--log-level", "--start-timeout", "--start_timeout"}
    | {"--execution-timeout", "--autosave-cell-every", "--stdout-file", "--stderr-file"}
)
_PAPERMILL_PAIRS = frozenset({"-p", "--parameters", "-r", "--parameters_raw"})


def _split(
    argv: Sequence[str], values: frozenset[str], pairs: frozenset[str] = frozenset()
) -> tuple[list[str], dict[str, str]]:
    """The positional arguments of ``argv`` and the values of its one-value options."""
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-") and "=" in arg:
            name, _, value = arg.partition("=")
            options[name] = value
        elif arg in pairs:
            i += 2
        elif arg in values:
            if i + 1 < len(argv):
                options[arg] = argv[i + 1]
            i += 1
        elif not arg.startswith("-"):
            positional.append(arg)
        i += 1
    return positional, options


def _program(argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """Which runner ``argv`` is and the arguments after its name (``python -m nbconvert …`` too)."""
    for i, arg in enumerate(argv):
        name = Path(arg).name
        if name in ("jupyter-nbconvert", "nbconvert"):
            return "nbconvert", list(argv[i + 1 :])
        if name == "jupyter-execute":
            return "execute", list(argv[i + 1 :])
        if name == "papermill":
            return "papermill", list(argv[i + 1 :])
        if name == "jupyter" and argv[i + 1 : i + 2] in (["nbconvert"], ["execute"]):
            return argv[i + 1], list(argv[i + 2 :])
    return None


def parse_runner(argv: Sequence[str], where: Path) -> Runner | None:
    """The runner of command line ``argv`` run in folder ``where``, or ``None`` for another program.

    Option values are never taken for notebooks: ``--output run1.ipynb analysis.ipynb`` names one
    notebook, ``analysis.ipynb``.
    """
    found = _program(argv)
    if found is None:
        return None
    program, args = found
    if program == "papermill":
        positional, options = _split(args, _PAPERMILL_VALUES, _PAPERMILL_PAIRS)
        named = [_absolute(where, a) for a in positional[:1] if "://" not in a]
        output = positional[1] if len(positional) > 1 else None
        return Runner("papermill", tuple(named), output)
    values = _NBCONVERT_VALUES if program == "nbconvert" else _EXECUTE_VALUES
    positional, options = _split(args, values)
    names = [a for a in positional if a.endswith(".ipynb")]
    # ``jupyter execute x`` adds the suffix itself
    names += [
        a + ".ipynb"
        for a in positional
        if "." not in Path(a).name and _absolute(where, a + ".ipynb").exists()
    ]
    output = options.get("--output")
    if program == "nbconvert":
        how = "jupyter nbconvert --execute" + (f" --output {output}" if output else "")
    else:
        how = "jupyter execute" + (f" --output {output}" if output else "")
    return Runner(how, tuple(_absolute(where, a) for a in names), output)


def _absolute(where: Path, argument: str) -> Path:
    path = Path(argument).expanduser()
    return path if path.is_absolute() else where / path


def parent_command(proc: Path = Path("/proc"), parent: int | None = None) -> tuple[list[str], Path] | None:
    """The command line and working folder of the process that started this one (``None`` where
    ``/proc`` cannot tell)."""
    pid = os.getppid() if parent is None else parent
    try:
        argv = (proc / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
        where = Path(os.readlink(proc / str(pid) / "cwd"))
    except OSError:
        return None
    return [a for a in argv if a], where


def find_runner(proc: Path = Path("/proc"), parent: int | None = None) -> Runner | None:
    """The batch runner that started this kernel, if it is one nbagent knows."""
    command = parent_command(proc, parent)
    return None if command is None else parse_runner(*command)


def runner_notebook(runner: Runner | None, cwd: Path | None = None) -> Path | None:
    """The notebook ``runner`` executes in this kernel: its one notebook, or, of several, the one in
    this kernel's working directory (nbclient starts the kernel in the notebook's folder) when that is
    the only one there; ``None`` otherwise."""
    if runner is None or not runner.notebooks:
        return None
    if len(runner.notebooks) == 1:
        return runner.notebooks[0]
    here = (Path.cwd() if cwd is None else cwd).resolve()
    in_this_folder = [c for c in runner.notebooks if c.parent.resolve() == here]
    return in_this_folder[0] if len(in_this_folder) == 1 else None


def lone_notebook(cwd: Path) -> Path | None:
    """The one notebook in ``cwd``, if it holds exactly one (what a script driving nbclient runs: the
    kernel starts in the notebook's folder)."""
    try:
        found = [p for p in cwd.iterdir() if p.suffix == ".ipynb" and p.is_file()]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def run_identity(proc: Path = Path("/proc"), parent: int | None = None, kernel: str | None = None) -> str:
    """This run: the process that started the kernel (its id and start time, so a reused id is
    another run) and the kernel's connection file (one runner may run several notebooks, each in a
    kernel of its own). A kernel it restarts has the same parent and connection file: the same run."""
    pid = os.getppid() if parent is None else parent
    try:
        stat = (proc / str(pid) / "stat").read_text()
        started = stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name
    except (OSError, IndexError):
        started = "?"
    return f"{pid}@{started}:{Path(kernel).name if kernel else connection_file()}"


def connection_file() -> str:
    """The name of this kernel's connection file (kept when its manager restarts it), or ``""``."""
    try:
        from ipykernel.connect import get_connection_file

        return Path(get_connection_file()).name
    except Exception:  # not in a kernel
        return ""


def without_front_end(shell: Any) -> bool:
    """Whether the cell being run came from a runner with no front end: its execute request forbids
    standard input (nbclient), where JupyterLab, Notebook 7, VS Code and consoles allow it."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return False  # a terminal IPython: someone is typing
    try:
        parent = get_parent("shell")
    except Exception:  # an ipykernel without channels in get_parent
        return False
    if not isinstance(parent, Mapping) or parent.get("msg_type") != "execute_request":
        return False
    return parent.get("content", {}).get("allow_stdin") is False


def describe_run(
    runner: Runner | None, *, headless: bool, user_ns: Mapping[str, Any], environ: Mapping[str, str]
) -> str:
    """How this notebook is run, in a user's words: the runner's command, ``nbclient`` (another
    program driving nbclient), or ``interactive`` with the front end where known."""
    if runner is not None:
        return runner.how
    if headless:
        command = parent_command()
        if command is not None and any(Path(a).name == "nbagent" for a in command[0]):
            if "quickstart" in command[0]:
                return "nbagent quickstart --headless"
        return "nbclient"
    if isinstance(user_ns.get("__vsc_ipynb_file__"), str):
        return "interactive (VS Code)"
    if environ.get("JPY_SESSION_NAME"):
        return "interactive (Jupyter)"
    return "interactive"


def run_title(how: str, moment: float | None = None) -> str:
    """A headless run's session title: how it was run and when."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if moment is None else moment))
    return f"{how} · {stamp}"


def how_run(metadata: Mapping[str, Any]) -> str:
    """How a session's notebook was run, from the session's metadata (``not recorded`` for a session
    opened from Python or by an older nbagent)."""
    run = metadata.get("run")
    how = run.get("how") if isinstance(run, Mapping) else None
    return how if isinstance(how, str) and how else "not recorded"
