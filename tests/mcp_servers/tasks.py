"""A bare JSON-RPC MCP server over stdio (no SDK, so it speaks the same to the SDK's 1.x and 2.x
clients) listing three tools: ``now``, an ordinary one; ``research``, which declares
``execution.taskSupport: "required"`` (it can only be run as an MCP task); and ``confirm``, which
sends an ``elicitation/create`` request to the client during the call and answers with the action
the client took."""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {"name": "now", "description": "An ordinary tool.", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "research",
        "description": "Runs only as a task.",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "required"},
    },
    {"name": "confirm", "description": "Asks the user.", "inputSchema": {"type": "object", "properties": {}}},
]

ELICIT = {
    "jsonrpc": "2.0",
    "id": "ask-1",
    "method": "elicitation/create",
    "params": {
        "message": "Delete everything?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
    },
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def elicit() -> str:
    """Ask the client, and read until its answer (other messages meanwhile are ignored)."""
    send(ELICIT)
    for line in sys.stdin:
        message = json.loads(line) if line.strip() else {}
        if message.get("id") == "ask-1":
            if "error" in message:
                return f"error {message['error'].get('code')}"
            return str(message.get("result", {}).get("action"))
    return "no answer"


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-11-25")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tasks", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and request.get("params", {}).get("name") == "confirm":
        result = {"content": [{"type": "text", "text": f"the client answered: {elicit()}"}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "12:00"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            send(reply)
