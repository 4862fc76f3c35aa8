"""A real session whose every field a view shows holds the hostile corpus (:mod:`hostile`): the
title, a typed prompt, injected context and its label, the model's name and answer, a tool's name,
arguments and result, and messages still pending."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hostile import ITEMS

ALL = "\n".join(ITEMS.values())
"""Every payload, one after another: the model's answer and the tool's result."""
TOOL_NAME = "lookup<img src=x onerror=window.__nbagent_xss='tool-name'>"
MODEL_NAME = "scripted<script>window.__nbagent_xss='model-name'</script>"


async def _write(path: Path) -> str:
    import nbagent
    from nbagent.context import cell_text
    from nbagent.models import Response, ScriptedModel, ToolCall

    lookup = nbagent.tool(lambda query: ALL, name=TOOL_NAME, description="Looks things up.")
    model = ScriptedModel(
        [Response(tool_calls=[ToolCall(TOOL_NAME, {"query": ITEMS["md-link"]})]), ALL], name=MODEL_NAME
    )
    agent = nbagent.open_session(path, model=model, tools=[lookup], title=ITEMS["img-onerror"])
    agent.inject(cell_text(ALL, label=ITEMS["script"]))
    await agent.run(ITEMS["md-image"])
    for text in ITEMS.values():
        agent.inject(cell_text(text, label=text))  # pending: never seen by the model
    sid = agent.session_id
    await agent.close()
    return sid


def write_hostile_session(path: Path) -> str:
    """Write the session into ``path`` (on a thread of its own, so a caller's event loop is left
    alone); returns its id."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _write(path)).result()
