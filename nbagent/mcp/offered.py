"""MCP tools as nbagent tools: ``SERVER__TOOL`` with the server's JSON schema, calling through the
server's connection; and the stand-in that answers a call to a server that is not up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nbagent._json import freeze
from nbagent.core.tools import Tool, ToolResult
from nbagent.mcp.connection import McpConnection
from nbagent.mcp.results import clip, hide_values

DESCRIPTION_CHARS = 4000

SIGNAL_KEY = "_nbagent_signal"
"""Where the turn's cancellation signal is passed (a key no server's schema uses)."""


def is_read_only(mcp_tool: dict[str, Any]) -> bool:
    """Whether the server annotates ``mcp_tool`` read-only (``readOnlyHint``)."""
    annotations = mcp_tool.get("annotations")
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


def needs_tasks(mcp_tool: dict[str, Any]) -> bool:
    """Whether ``mcp_tool`` can only be called as an MCP task (``execution.taskSupport: "required"``),
    which nbagent does not do: such a tool is not offered."""
    execution = mcp_tool.get("execution")
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


Progress = Callable[[str, str], None]
"""Told ``(tool name, what the server says of its progress)`` during a call."""


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """One line for a progress notification: ``step 2 of 5 (2/5)``, ``40%``, ``3``…"""
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    return clip(f"{message} ({amount})" if message else amount, 120).replace("\n", " ")


def offered_tool(
    conn: McpConnection,
    mcp_tool: dict[str, Any],
    name: str,
    *,
    allow_read_only: bool,
    on_progress: Progress | None = None,
) -> Tool:
    """``mcp_tool`` (its wire JSON) of ``conn``'s server offered as ``name``; it asks for approval
    unless it is annotated read-only and read-only tools are allowed. ``on_progress`` hears the
    server's progress notifications of each call."""
    remote = str(mcp_tool["name"])

    async def progress(amount: float, total: float | None, message: str | None) -> None:
        if on_progress is not None:
            on_progress(name, hide_values(progress_text(amount, total, message), conn.secrets()))

    async def call(**arguments: Any) -> ToolResult:
        signal = arguments.pop(SIGNAL_KEY, None)
        task = asyncio.get_running_loop().create_task(conn.call(remote, arguments, progress))
        remove = signal.on_cancel(task.cancel) if signal is not None else None
        try:
            return await task  # a cancelled turn cancels the call (the SDK tells the server)
        finally:
            if remove is not None:
                remove()

    raw = mcp_tool.get("inputSchema")
    schema = dict(raw) if isinstance(raw, dict) else {}
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    title = mcp_tool.get("title")
    description = str(mcp_tool.get("description") or title or f"{remote} (from MCP server {conn.name})")
    free = allow_read_only and is_read_only(mcp_tool)
    return Tool(
        fn=call,
        name=name,
        description=clip(f"[MCP server {conn.name}] {description}", DESCRIPTION_CHARS),
        parameters=freeze(schema, f"the input schema of MCP tool {remote!r}"),
        parallel_safe=free,
        requires_approval=not free,
        _signal_param=SIGNAL_KEY,
    )


def stand_in(conn: McpConnection, name: str) -> Tool:
    """A tool for a call named ``name`` that ``conn``'s server does not offer now: its result says
    why (the server is starting, failed, stopped, or has no such tool)."""

    async def explain(**_arguments: Any) -> ToolResult:
        if conn.state == "ready":
            known = ", ".join(sorted(str(t["name"]) for t in conn.tools)) or "none"
            text = f"Error: MCP server {conn.name!r} has no tool for {name!r} (its tools: {known})"
            return ToolResult(text, is_error=True, code="TOOL_NOT_FOUND")
        return ToolResult(f"Error: {conn.unavailable()}", is_error=True, code="MCP_SERVER_UNAVAILABLE")

    return Tool(fn=explain, name=name, description="", parameters=freeze({"type": "object"}))
