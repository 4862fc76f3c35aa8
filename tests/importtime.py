"""What a fresh interpreter imports, read from ``python -X importtime`` (the tests of what the CLI
and opening a session must not load)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import nbagent

ROOT = Path(nbagent.__file__).resolve().parent.parent


def imported_modules(*argv: str) -> tuple[set[str], str]:
    """The modules ``python -X importtime *argv`` imports (this checkout first on the path), and what
    it printed; a failing run fails the test with its stderr."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, done.stdout


def within(modules: Iterable[str], packages: Iterable[str]) -> list[str]:
    """The ``modules`` that are one of ``packages`` or inside one, sorted."""
    prefixes = tuple(packages)
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))
