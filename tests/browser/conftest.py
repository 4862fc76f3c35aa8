"""One JupyterLab server per module, driven by Playwright in Debian's Chromium (never a downloaded one).

Every test gets a fresh page in its own JupyterLab workspace, and its own notebook in the server's
temporary root. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT_MS = 60_000


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _settings(root: Path, save_widget_state: bool = True) -> Path:
    """Lab settings that keep the browser off the network (no news, no update checks); the suite
    turns "Save Widget State Automatically" on unless ``save_widget_state`` is false (JupyterLab's
    default)."""
    settings = root / "settings"
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    widgets = settings / "@jupyter-widgets" / "jupyterlab-manager"
    widgets.mkdir(parents=True)
    (widgets / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": save_widget_state}))
    return settings


def _checkout_extension(base: Path) -> dict[str, str]:
    """Serve this checkout's built extension (``labextension/dist``) ahead of the installed copy:
    JupyterLab takes the first ``labextensions/nbagent`` on its path, and ``JUPYTER_PATH`` comes
    first. A worktree's tests then see the worktree's build, not the one pip installed."""
    dist = Path(__file__).resolve().parents[2] / "labextension" / "dist"
    if not (dist / "package.json").is_file():
        return {}
    data = base / "jupyter-data"
    (data / "labextensions").mkdir(parents=True, exist_ok=True)
    (data / "labextensions" / "nbagent").symlink_to(dist, target_is_directory=True)
    return {"JUPYTER_PATH": os.pathsep.join([str(data), os.environ.get("JUPYTER_PATH", "")])}


@dataclass
class Lab:
    """A running ``jupyter lab`` server: its URL, token and notebook root directory."""

    url: str
    token: str
    root: Path

    def lab_url(self, notebook: str, workspace: str) -> str:
        return f"{self.url}/lab/workspaces/{workspace}/tree/{notebook}?token={self.token}"

    def notebook7_url(self, notebook: str) -> str:
        return f"{self.url}/notebooks/{notebook}?token={self.token}"

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """Write ``name`` (code cells from ``cells``) into the server's root; returns its file name."""
        nb = {
            "cells": [
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "id": f"c{i}",
                    "metadata": {},
                    "outputs": [],
                    "source": src,
                }
                for i, src in enumerate(cells)
            ],
            "metadata": {
                "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        path = self.root / f"{name}.ipynb"
        path.write_text(json.dumps(nb, indent=1))
        return path.name


@contextlib.contextmanager
def start_lab(
    base: Path,
    *,
    save_widget_state: bool = True,
    root: Path | None = None,
    extra_args: tuple[str, ...] = (),
) -> Iterator[Lab]:
    """Run ``jupyter lab`` on a free port of 127.0.0.1 with a fresh token and root under ``base``
    (or ``root``); ``extra_args`` go to the server's command line."""
    if root is None:
        root = base / "notebooks"
        root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        **_checkout_extension(base),
        "JUPYTERLAB_SETTINGS_DIR": str(_settings(base, save_widget_state)),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
        ),
    }
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
        "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
        "--ServerApp.port_retries=0", "--LabApp.extension_manager=readonly",
        *extra_args,
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = (base / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not start:\n{(base / 'server.log').read_text()[-3000:]}")
            time.sleep(0.2)
        yield Lab(url, token, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    pytest.importorskip("jupyterlab")
    pytest.importorskip("anywidget")
    with start_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def shot(page: Any, name: str, element: Any = None) -> Path:
    """Save a screenshot (of the page, or of ``element``) under ``test-artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    (element or page).screenshot(path=str(path))
    return path


def copy_artifact(src: Path, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(src, ARTIFACTS / name)
