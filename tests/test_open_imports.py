"""``import nbagent`` + opening a session imports only the runtime it runs on: no provider,
DataFrame, IPython, Jupyter, tiktoken, genai-prices or MCP module, nor the views, the notebook
layer or the PostgreSQL store (issue #20 item 2; checked with ``python -X importtime`` in a fresh
process, on a new file and on resuming it)."""

from __future__ import annotations

from pathlib import Path

from importtime import imported_modules, within

NOT_FOR_OPENING = (
    # providers and their clients
    "openai",
    "anthropic",
    "httpx",
    "google",
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
    "tornado",
    "zmq",
    # token counting, prices, tool servers
    "tiktoken",
    "genai_prices",
    "mcp",
    # what a session opened in a script does not use
    "psycopg",
    # the PostgreSQL backend: only its package and URL recognition (postgres/location.py) load
    *(
        f"nbagent.store.postgres.{m}"
        for m in ("store", "pool", "lease", "writes", "listen", "watchdog", "schemas")
    ),
    "nbagent.views",
    "nbagent.widgets",
    "nbagent.notebook",
    "nbagent.context",
    "nbagent.labserver",
    "nbagent.usage",
)

SCRIPT = """
import asyncio, sys, nbagent
async def main():
    agent = nbagent.open_session(sys.argv[1])
    agent.inject("context")
    await agent.close()
    again = nbagent.resume_session(sys.argv[1], agent.session_id)
    await again.close()
asyncio.run(main())
"""


def imported_by_opening(path: Path) -> set[str]:
    modules, _ = imported_modules("-c", SCRIPT, str(path))
    assert {"nbagent.core.agent", "nbagent.store.sqlite.store"} <= modules  # the listing is real
    return modules


def test_opening_and_resuming_a_session_imports_no_provider_frame_notebook_or_counter(tmp_path):
    modules = imported_by_opening(tmp_path / "s.nbagent.sqlite")
    assert within(modules, NOT_FOR_OPENING) == []
