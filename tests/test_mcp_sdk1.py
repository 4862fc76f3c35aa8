"""nbagent with the ``mcp`` SDK 1.x (what Jupyter AI 3 installs through fastmcp, which pins ``mcp<2``;
SPEC §9.7): the MCP tests run again in an interpreter whose ``mcp`` is 1.x.

``scripts/test.sh`` makes that interpreter the way it makes the ipykernel 6 one: a pip-less venv under
``build/mcp1`` whose own site-packages holds only ``mcp`` 1.x (and ``httpx-sse``, which 1.x needs) and
that sees this interpreter's packages behind it. ``NBAGENT_MCP1_PYTHON`` names it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MCP1_PYTHON = os.environ.get("NBAGENT_MCP1_PYTHON") or str(ROOT / "build" / "mcp1" / "bin" / "python")
RERUN = [
    "tests/test_mcp.py",
    "tests/test_mcp_config.py",
    "tests/test_mcp_http.py",
    "tests/test_mcp_images.py",
]


def _sdk_major(python: str) -> int | None:
    try:
        done = subprocess.run(
            [python, "-c", "from importlib.metadata import version; print(version('mcp'))"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except OSError:
        return None
    return int(done.stdout.split(".")[0]) if done.returncode == 0 and done.stdout.strip() else None


@pytest.mark.skipif(
    not Path(MCP1_PYTHON).exists(),
    reason=f"no mcp 1.x interpreter at {MCP1_PYTHON}: scripts/test.sh makes it (or set NBAGENT_MCP1_PYTHON)",
)
def test_the_mcp_tests_pass_with_the_sdk_1_x():
    assert _sdk_major(MCP1_PYTHON) == 1, f"{MCP1_PYTHON} does not have mcp 1.x"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [MCP1_PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *RERUN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-40:])
    assert done.returncode == 0, f"the MCP tests failed with mcp 1.x:\n{tail}"
    assert " passed" in tail and "skipped" not in tail.splitlines()[-1], tail


def test_this_interpreter_is_not_the_1_x_one():
    """The main run is the 2.x side of the pair (pyproject allows both)."""
    from importlib.metadata import version

    assert int(version("mcp").split(".")[0]) >= 2 or sys.executable == MCP1_PYTHON
