"""The MCP servers of one agent: added at any time from any thread, offered as tools from the next
request on, stopped when the agent closes (SPEC §9.7).

Adding a server returns at once and starts it on the agent's loop. Before each model request a
``pre_step`` listener brings the offered tools up to date; the first request after a server was added
waits at most ``FIRST_REQUEST_WAIT`` seconds for that server's tool list. A server that is starting,
failed or stopped offers no tools, and a call to any ``SERVER__…`` name is answered with an error
result saying why (:meth:`McpServers.stand_in`).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from nbagent.core.hooks import Enter
from nbagent.core.tools import Tool
from nbagent.log.messages import PluginSource, UserMessage
from nbagent.mcp.config import FIRST_REQUEST_WAIT, ServerSpec
from nbagent.mcp.connection import McpConnection, require_sdk
from nbagent.mcp.names import SEPARATOR, server_prefix, tool_name
from nbagent.mcp.offered import needs_tasks, offered_tool, stand_in
from nbagent.mcp.results import clip

if TYPE_CHECKING:
    from nbagent.core.hooks import Hooks


def missing_tools_notice(conns: list[McpConnection]) -> UserMessage:
    """Context entered with the first request that goes without these servers' tools (still
    starting, or failed): the turn's cell, the timeline and the model see which and why."""
    lines = [
        f"MCP server {c.name!r} is still starting: its tools are not offered in this request"
        if c.state == "starting"
        else f"{c.unavailable()}; its tools are not offered in this request"
        for c in conns
    ]
    names = ", ".join(repr(c.name) for c in conns)
    summary = clip(f"MCP tools not offered: {names}", 110)
    source: PluginSource = {"kind": "plugin", "plugin": "nbagent.mcp", "form": "notice", "summary": summary}
    return UserMessage.text("\n".join(lines), source=source)


logger = logging.getLogger(__name__)


class Host(Protocol):
    """What the servers use of their agent (:class:`nbagent.core.agent.Agent`)."""

    hooks: Hooks
    driver: Any
    """Its driver: the servers start on ``driver.loop``."""

    @property
    def closed(self) -> bool: ...

    @property
    def tools(self) -> dict[str, Tool]: ...

    def add_tool(self, tool: Tool) -> Tool: ...

    def remove_tool(self, name: str) -> Tool | None: ...


@dataclass(frozen=True)
class ServerInfo:
    """One server as ``%agent mcp list`` shows it."""

    name: str
    transport: str
    target: str
    state: str
    reason: str | None
    tools: tuple[str, ...]
    """The names the model sees."""
    skipped: tuple[str, ...] = ()
    """Tools not offered, with why (a name clash)."""


class McpServers:
    """The MCP servers of ``agent`` (its ``mcp`` attribute)."""

    def __init__(self, agent: Host) -> None:
        self._agent = agent
        self._lock = threading.Lock()
        self._servers: dict[str, McpConnection] = {}
        self._unwaited: set[str] = set()
        """Servers no request has waited for yet."""
        self._offered: dict[str, Tool] = {}
        self._built: dict[str, tuple[bool, dict[str, Tool], tuple[str, ...]]] = {}
        self._allow_read_only = False
        self._unhook: Any = None
        self._closed = False
        self._progress_listeners: list[Callable[[str, str], None]] = []

    # -- the public surface ---------------------------------------------------------------------

    @property
    def allow_read_only(self) -> bool:
        """Whether tools annotated read-only run without approval on every server
        (``%agent approvals read-only``); each server may also allow it on its own."""
        return self._allow_read_only

    @allow_read_only.setter
    def allow_read_only(self, value: bool) -> None:
        self._allow_read_only = bool(value)

    def add(self, spec: ServerSpec) -> ServerInfo:
        """Add a server and start it in the background; a name clash is refused with ``ValueError``."""
        require_sdk()
        prefix = server_prefix(spec.name)
        with self._lock:
            if self._closed or self._agent.closed:
                raise ValueError(f"cannot add MCP server {spec.name!r}: the session is closed")
            self._check_clash(spec.name, prefix)
            conn = McpConnection(spec, prefix)
            self._servers[spec.name] = conn
            self._unwaited.add(spec.name)
            if self._unhook is None:
                self._unhook = self._agent.hooks.pre_step.add(self._before_step)
        self._agent.driver.loop.call_soon_threadsafe(conn.start)
        return self._info(conn)

    async def remove(self, name: str) -> bool:
        """Stop and forget server ``name`` (on the agent's loop); ``False`` if there is none."""
        with self._lock:
            conn = self._servers.pop(name, None)
            self._unwaited.discard(name)
            self._built.pop(name, None)
        if conn is None:
            return False
        self._sync_tools()
        await conn.stop("removed")
        return True

    def on_progress(self, listener: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``listener(tool, text)`` (on the agent's loop) for each progress notification of a
        running call; returns the function that removes it. Not logged: the live cell shows it."""
        self._progress_listeners.append(listener)
        return lambda: (
            self._progress_listeners.remove(listener) if listener in self._progress_listeners else None
        )

    def _progressed(self, tool: str, text: str) -> None:
        for listener in list(self._progress_listeners):
            try:
                listener(tool, text)
            except Exception:  # a listener's failure never breaks the call
                logger.exception("an MCP progress listener failed")

    def list(self) -> list[ServerInfo]:
        """Every server, in the order added."""
        with self._lock:
            conns = list(self._servers.values())
        return [self._info(c) for c in conns]

    def offered(self) -> dict[str, Tool]:
        """The tools these servers offer the agent now, by name (they call these connections)."""
        with self._lock:
            return dict(self._offered)

    def connection(self, name: str) -> McpConnection | None:
        with self._lock:
            return self._servers.get(name)

    async def close(self) -> None:
        """Stop every server (the agent is closing)."""
        with self._lock:
            self._closed = True
            conns = list(self._servers.values())
            if self._unhook is not None:
                self._unhook()
                self._unhook = None
        if conns:
            await asyncio.gather(*(c.stop("stopped with the session") for c in conns))

    def stand_in(self, name: str) -> Tool | None:
        """The tool answering a call to ``name`` when no offered tool has that name: for a
        ``SERVER__…`` name, an error result naming the server and why; else ``None``."""
        with self._lock:
            conns = list(self._servers.values())
        for conn in conns:
            if name.startswith(conn.prefix + SEPARATOR):
                return stand_in(conn, name)
        return None

    # -- before each request --------------------------------------------------------------------

    async def _before_step(self, step: Any, next: Any) -> Any:
        waited = await self._wait_first_lists(step.signal)
        self._sync_tools()
        decision = await next()
        missing = [c for c in waited if c.state != "ready"]
        if not missing or not isinstance(decision, Enter):
            return decision
        return Enter([*decision.messages, missing_tools_notice(missing)])

    async def _wait_first_lists(self, signal: Any) -> builtins.list[McpConnection]:
        """Wait (bounded) for the servers no request has waited for yet; returns them."""
        with self._lock:
            waiting = [self._servers[n] for n in self._unwaited if n in self._servers]
            self._unwaited.clear()
        pending = [c for c in waiting if c.state == "starting"]
        if not pending:
            return waiting
        cancelled = asyncio.get_running_loop().create_future()

        def stop_waiting() -> None:
            if not cancelled.done():
                cancelled.set_result(None)

        remove = signal.on_cancel(stop_waiting)
        deadline = time.monotonic() + FIRST_REQUEST_WAIT
        try:
            started = asyncio.gather(
                *(c.wait_started(max(0.0, deadline - time.monotonic())) for c in pending)
            )
            await asyncio.wait({started, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not started.done():
                started.cancel()
        finally:
            remove()
        return waiting

    def _sync_tools(self) -> None:
        """Offer exactly the tools of the ready servers (on the agent's loop, between requests)."""
        agent = self._agent
        with self._lock:
            conns = list(self._servers.values())
        wanted: dict[str, Tool] = {}
        for conn in conns:
            if conn.state == "ready":
                wanted.update(self._tools_of(conn))
        for name, old in list(self._offered.items()):
            if wanted.get(name) is not old:
                if agent.tools.get(name) is old:
                    agent.remove_tool(name)
                del self._offered[name]
        for name, tool in wanted.items():
            if name not in self._offered and name not in agent.tools:
                agent.add_tool(tool)
                self._offered[name] = tool

    def _tools_of(self, conn: McpConnection) -> dict[str, Tool]:
        allow = self._allow_read_only or conn.spec.allow_read_only
        built = self._built.get(conn.name)
        if built is not None and built[0] == allow:
            return built[1]
        tools: dict[str, Tool] = {}
        skipped: list[str] = []
        others = {n for n, t in self._agent.tools.items() if n not in self._offered}
        for mcp_tool in conn.tools:
            remote = str(mcp_tool["name"])
            name = tool_name(conn.prefix, remote)
            if needs_tasks(mcp_tool):
                skipped.append(f"{remote} (it runs only as an MCP task, which nbagent does not support)")
                continue
            if name in tools or name in others:
                skipped.append(f"{remote} (its name {name} is taken)")
                continue
            tools[name] = offered_tool(
                conn, mcp_tool, name, allow_read_only=allow, on_progress=self._progressed
            )
        self._built[conn.name] = (allow, tools, tuple(skipped))
        return tools

    # -- helpers --------------------------------------------------------------------------------

    def _check_clash(self, name: str, prefix: str) -> None:
        if name in self._servers:
            raise ValueError(f"an MCP server named {name!r} is already added; remove it first")
        head = prefix + SEPARATOR
        for other in self._servers.values():
            theirs = other.prefix + SEPARATOR
            if theirs.startswith(head) or head.startswith(theirs):
                raise ValueError(
                    f"MCP server {name!r} would offer tools named {head}… like server {other.name!r} "
                    f"({theirs}…); choose another name"
                )
        taken = [t for t in self._agent.tools if t.startswith(head) and t not in self._offered]
        if taken:
            raise ValueError(
                f"MCP server {name!r} would offer tools named {head}…, but tool {taken[0]!r} already "
                "has that prefix; choose another name"
            )

    def _info(self, conn: McpConnection) -> ServerInfo:
        built = self._built.get(conn.name)
        if conn.state == "ready":
            names = (
                tuple(built[1])
                if built
                else tuple(tool_name(conn.prefix, str(t["name"])) for t in conn.tools if not needs_tasks(t))
            )
        else:
            names = ()
        return ServerInfo(
            name=conn.name,
            transport=conn.spec.transport,
            target=conn.spec.target,
            state=conn.state,
            reason=conn.reason,
            tools=names,
            skipped=built[2] if built else (),
        )
