"""nbagent beside Jupyter AI 3.2 (SPEC §9.7): ``jupyter-ai==3.2.0`` pulls in fastmcp 3, which pins
``mcp<2``, so the environment has the SDK 1.x. In a venv holding both (``build/jupyter-ai``, made here
or by scripts/test.sh and kept), JupyterLab starts with both extensions, and a notebook kernel adds an
MCP server with ``%agent mcp add`` and calls its tool.

The venv's nbagent supplies the installed parts (the lab extension, the server extension's config);
the code under test comes first on ``PYTHONPATH``. Without the venv and without network to make it,
the tests skip, saying why.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events
from mcp_helpers import DEMO, free_port, new_tag, pids_with, wait_until
from test_mcp_kernel import scripted_call, wait_listed

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("NBAGENT_JUPYTER_AI_VENV") or ROOT / "build" / "jupyter-ai")
PYTHON = str(VENV / "bin" / "python")
JUPYTER_AI = "jupyter-ai==3.2.0"


def _ready() -> bool:
    check = "import jupyter_ai, nbagent.labserver, mcp; from importlib.metadata import version; print(version('jupyter-ai'))"
    try:
        done = subprocess.run([PYTHON, "-c", check], capture_output=True, text=True, timeout=300, env=_env())
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == "3.2.0"


def _env() -> dict[str, str]:
    """The venv's environment: its own packages, with the code under test ahead of its nbagent."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(ROOT)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _make() -> str | None:
    """Make the venv: Jupyter AI, then nbagent built from this checkout. ``None``, or why not."""
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(VENV)],
        [PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check", JUPYTER_AI],
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(VENV / "wheel"), str(ROOT)],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            return f"could not make {VENV} ({' '.join(step[2:5])}): {(done.stderr or done.stdout).strip()[-400:]}"
    (wheel,) = (VENV / "wheel").glob("nbagent-*.whl")
    done = subprocess.run(
        [PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[notebook,mcp]"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        return f"could not install nbagent beside Jupyter AI: {(done.stderr or done.stdout).strip()[-400:]}"
    return None


@pytest.fixture(scope="module")
def jupyter_ai() -> str:
    """The venv's interpreter (made once and kept under build/, like build/ipykernel6)."""
    if not _ready():
        why = _make()
        if why is not None:
            if re.search(r"(?i)connection|network|resolve|proxy|No matching distribution", why):
                pytest.skip(f"no network to install {JUPYTER_AI}: {why}")
            pytest.fail(why)
    return PYTHON


def _jupyter(python: str, *args: str) -> str:
    done = subprocess.run(
        [python, "-m", "jupyter", *args], capture_output=True, text=True, timeout=300, env=_env()
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def test_jupyter_ai_installs_the_sdk_1_x_and_both_extensions_are_enabled(jupyter_ai):
    version = subprocess.run(
        [jupyter_ai, "-c", "from importlib.metadata import version; print(version('mcp'))"],
        capture_output=True,
        text=True,
        env=_env(),
    ).stdout.strip()
    assert version.startswith("1."), version  # what fastmcp's mcp<2 leaves
    labs = _jupyter(jupyter_ai, "labextension", "list")
    assert re.search(r"nbagent v\S+ enabled OK", labs), labs
    assert re.search(r"@jupyter-ai/router v\S+ enabled OK", labs), labs
    servers = _jupyter(jupyter_ai, "server", "extension", "list")
    assert re.search(r"nbagent\.labserver\s+\S*\s*OK", servers), servers
    assert re.search(r"jupyter_ai_router\s+\S*\s*OK", servers), servers


def test_jupyterlab_serves_both_extensions(jupyter_ai, tmp_path):
    port, token = free_port(), "nbagent-test-token"
    argv = [jupyter_ai, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={tmp_path}", "--ServerApp.open_browser=False", "--ServerApp.allow_root=True"]  # fmt: skip
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> tuple[int, bytes]:
        request = urllib.request.Request(base + path, headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read()
        except OSError as exc:
            return getattr(exc, "code", 0), b""

    try:
        wait_until(
            lambda: get("/api/status")[0] == 200 or lab.poll() is not None, 300, "JupyterLab answering"
        )
        assert lab.poll() is None, (tmp_path / "lab.log").read_text()[-2000:]
        status, body = get("/nbagent/api/sessions?path=")
        assert status == 200 and isinstance(json.loads(body), list | dict)
        status, page = get("/lab")
        assert status == 200
        settings = json.loads(re.search(rb'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S)[1])
        names = {e["name"] for e in settings.get("federated_extensions", [])}
        assert {"nbagent", "@jupyter-ai/router", "@jupyter-ai/persona-manager"} <= names, names
        log_text = (tmp_path / "lab.log").read_text()
        assert "jupyter_ai_router | extension was successfully loaded" in log_text
        assert "nbagent.labserver | extension was successfully loaded" in log_text
        assert "Traceback" not in log_text, log_text[-2000:]
    finally:
        lab.terminate()
        lab.wait(timeout=60)
        log.close()


def test_a_kernel_beside_jupyter_ai_adds_an_mcp_server_and_calls_it(jupyter_ai, tmp_path):
    tag = new_tag()
    with Kernel(tmp_path, python=jupyter_ai) as kernel:
        assert kernel.run("import mcp.types as t; print(hasattr(t, 'Tool'))").strip() == "True"
        kernel.run("%load_ext nbagent")
        out = kernel.run(f"%agent mcp add demo -- {jupyter_ai} {DEMO} --tag {tag}")
        assert "is starting" in out and "ImportError" not in out, out
        listed = wait_listed(kernel, "· ready")
        assert "demo__add" in listed
        kernel.run("%agent approvals read-only")
        kernel.run(scripted_call("demo__add", {"a": 40, "b": 2}))
        kernel.run("%followup --wait add them")
        events = read_events(tmp_path / "work.nbagent.sqlite")
        kernel.run("%agent mcp remove demo")
    (result,) = [e for e in events if e.type == "tool/result"]
    assert result.data["message"]["content"][0]["content"][0]["text"] == "40 + 2 = 42"
    wait_until(lambda: not pids_with(tag), what="the server exiting")
