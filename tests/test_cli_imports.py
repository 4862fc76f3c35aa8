"""``nbagent --version`` and ``--help`` start fast: they import no provider, DataFrame, IPython or
Jupyter module, nor the agent runtime (checked with ``python -X importtime`` in a fresh process)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from importtime import ROOT, imported_modules, within

import nbagent

NOT_FOR_THE_CLI = (
    # providers
    "openai",
    "anthropic",
    "httpx",
    # DataFrames
    "pandas",
    "polars",
    "narwhals",
    "numpy",
    "pyarrow",
    # IPython, the kernel and the Jupyter server
    "IPython",
    "ipykernel",
    "ipywidgets",
    "jupyter_client",
    "jupyter_server",
    "jupyterlab",
    "nbformat",
    "nbclient",
    "tornado",
    "zmq",
    # the agent runtime: a command that runs a session imports it when it runs
    "pydantic",
    "nbagent.log",
    "nbagent.core",
    "nbagent.models",
    "nbagent.notebook",
    "nbagent.views",
    "nbagent.labserver",
    "nbagent.store",
)


def cli_imports(*args: str) -> tuple[set[str], str]:
    """The modules ``python -X importtime -m nbagent *args`` imports, and what it printed."""
    modules, out = imported_modules("-m", "nbagent", *args)
    assert "nbagent.__main__" in modules or "nbagent" in modules  # the listing is real
    return modules, out


def offending(modules: set[str]) -> list[str]:
    return within(modules, NOT_FOR_THE_CLI)


@pytest.mark.parametrize("args", [["--version"], ["--help"], []], ids=["version", "help", "no-command"])
def test_the_cli_answers_version_and_help_without_importing_what_commands_use(args):
    modules, out = cli_imports(*args)
    assert offending(modules) == []
    if args == ["--version"]:
        assert out.strip().endswith(nbagent.__version__)
    else:
        assert "quickstart" in out and "transcript" in out  # the commands are listed


def test_import_nbagent_loads_the_runtime_only_when_a_name_is_used():
    code = (
        "import sys, nbagent\n"
        "before = {m for m in sys.modules if m.startswith(('nbagent.log', 'nbagent.core', 'pydantic'))}\n"
        "nbagent.open_session\n"
        "after = {m for m in sys.modules if m.startswith(('nbagent.log', 'nbagent.core', 'pydantic'))}\n"
        "print(sorted(before), 'nbagent.core.agent' in after, 'nbagent.session' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True", "True"]


def test_every_public_name_resolves():
    for name in nbagent.__all__:
        assert getattr(nbagent, name) is not None, name
    assert set(nbagent.__all__) <= set(dir(nbagent))
    with pytest.raises(AttributeError, match="no_such_name"):
        nbagent.no_such_name  # noqa: B018
