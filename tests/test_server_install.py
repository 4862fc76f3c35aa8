"""The installed package carries the prebuilt JupyterLab extension and enables the server extension
(what ``pip install -e ".[all]"`` leaves behind, as Jupyter's own commands report it)."""

from __future__ import annotations

import re
import subprocess
import sys

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
