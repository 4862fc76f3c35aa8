"""Build the prebuilt JupyterLab extension when the Python package is built or installed.

``pip install -e ".[all]"`` (or any wheel build) runs this through hatch-jupyter-builder: it installs
the npm packages pinned by ``package-lock.json`` (``npm ci``), compiles the TypeScript and bundles it
with ``@jupyterlab/builder`` into ``labextension/dist``, which the wheel ships as
``share/jupyter/labextensions/nbagent``. A build that is newer than every source is kept as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "dist"
MARKER = OUTPUT / "package.json"
SOURCES = ("src", "style", "package.json", "package-lock.json", "tsconfig.json", "build.mjs")
SHARED_CSS = HERE.parent / "nbagent" / "views" / "nbagent.css"
NEED_NODE = (
    "nbagent: building the JupyterLab extension needs Node.js 20 or newer with npm on PATH "
    "(Debian/Ubuntu: apt-get install nodejs npm; elsewhere https://nodejs.org), then run the install again"
)


def _newest(paths: list[Path]) -> float:
    newest = 0.0
    for path in paths:
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
        elif path.is_dir():
            for sub in path.rglob("*"):
                if sub.is_file():
                    newest = max(newest, sub.stat().st_mtime)
    return newest


def is_current() -> bool:
    """The build in ``dist/`` is newer than every source it was made from."""
    if not MARKER.exists():
        return False
    return _newest([MARKER]) >= _newest([*(HERE / s for s in SOURCES), SHARED_CSS])


def _run(cmd: list[str]) -> None:
    print(">", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=HERE, check=True, env={**os.environ, "PYTHON": sys.executable})


def build_labextension(target_name: str, version: str, **_: object) -> None:
    """The hatch-jupyter-builder build function (``target_name``: wheel/sdist; ``version``:
    standard/editable)."""
    if is_current():
        print("nbagent: the JupyterLab extension build is current", flush=True)
        return
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        if MARKER.exists():
            print(f"{NEED_NODE}; keeping the existing (older) build", file=sys.stderr, flush=True)
            return
        raise SystemExit(NEED_NODE)
    lock = HERE / "package-lock.json"
    installed = HERE / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        _run([npm, "ci", "--no-audit", "--no-fund"])
    _run([npm, "run", "build:prod"])
    MARKER.touch()


if __name__ == "__main__":
    build_labextension("wheel", "standard")
