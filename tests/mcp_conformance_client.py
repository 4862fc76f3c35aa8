"""nbagent as the client of the MCP conformance suite (``@modelcontextprotocol/conformance client
--command "python tests/mcp_conformance_client.py"``): the suite starts a scenario's server and runs
this with its URL. The client is nbagent's own path: ``add_mcp_server(url=…)``, the tools offered to a
model, and a turn in which a scripted model calls each of them with arguments made from its schema."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall

EXAMPLES = {"integer": 1, "number": 2, "string": "text", "boolean": True, "array": [], "object": {}}


def example(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: a plain value of each required property's type."""
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    return {name: EXAMPLES.get(str((properties.get(name) or {}).get("type")), "text") for name in required}


async def allow(tool: Any, call: Any) -> str:
    return "allowed-once"


async def main(url: str) -> int:
    lister = ScriptedModel(["listed"])
    agent = nbagent.open_session(None, model=lister)
    agent.approver = allow
    agent.add_mcp_server("conf", url=url, start_timeout=20, call_timeout=20)
    await agent.run("which tools are there?")
    tools = [t for t in lister.requests[0].tools if t["name"].startswith("conf__")]
    calls = [ToolCall(t["name"], example(t["parameters"]), id=f"c{i}") for i, t in enumerate(tools)]
    agent.set_model(ScriptedModel([Response(tool_calls=calls), "done"] if calls else ["done"]))
    run = await agent.run("call each tool once")
    for event in agent.events:
        if event.type == "tool/result":
            print(event.data["message"]["content"][0]["content"])
    (server,) = agent.mcp.list()
    print(f"server: {server.state} {server.reason or ''} tools: {', '.join(server.tools)}")
    await agent.close()
    return 0 if server.state in ("ready", "stopped") and run.outcome == "completed" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
