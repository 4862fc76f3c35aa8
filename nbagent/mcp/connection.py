"""One MCP server's client, living on the agent's loop: started in the background, stopped with the session.

The SDK's session (``nbagent.mcp.sdk``: ``Client`` in 2.x, ``ClientSession`` in 1.x) is entered and
left in one task (anyio requires it), so each server gets a task that connects, lists the server's tools and then waits to be told to stop; tool calls are made
from the turn's own tasks through the connected client. Every wait is bounded: a server that does
not finish starting within ``start_timeout`` is failed (and its process stopped), a call that gets no
answer within ``call_timeout`` is given up, and a server whose connection ends (its process died)
fails the calls in flight at once. A stdio server's stderr goes to a temporary file whose last lines
explain a failure. A stdio server gets the SDK's default environment plus its ``env``, and no result
or failure reason carries the value of a secret-looking variable (:meth:`McpConnection.secrets`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import tempfile
from collections.abc import Iterable
from typing import Any, Literal, TextIO

from nbagent.core.tools import ToolResult
from nbagent.mcp import sdk
from nbagent.mcp.config import ServerSpec
from nbagent.mcp.results import clip, hide_secrets, hide_values, tool_result, with_notes
from nbagent.redaction import MIN_KNOWN, configured_secrets, looks_secret_name

State = Literal["starting", "ready", "failed", "stopped"]

STOP_PATIENCE = 8.0
"""Seconds a stopping server gets to close (the SDK closes stdin, then terminates, then kills)."""

STDERR_TAIL = 600
"""Characters of a failed stdio server's stderr quoted in its failure."""

STDERR_KEPT = 1_000_000
"""Bytes of a stdio server's stderr kept at most (the file is emptied after a call past it)."""

_MAX_TOOL_PAGES = 100


def require_sdk() -> None:
    """Raise a clear ``ImportError`` when the ``mcp`` package is missing (without importing it)."""
    if importlib.util.find_spec("mcp") is None:
        raise ImportError(
            'MCP servers need the mcp package, which is not installed: pip install "nbagent[mcp]"'
        )


def server_environment(spec: ServerSpec) -> dict[str, str]:
    """A stdio server's environment (SPEC §9.7): the SDK's default one (``PATH``, ``HOME``, ``USER``,
    locale…) plus ``spec.env``; a variable whose name looks like a secret's reaches the server only
    when ``spec.env`` names it, never from the kernel's own environment."""
    base = {k: v for k, v in sdk.default_environment().items() if not looks_secret_name(k)}
    return {**base, **spec.env}


def describe(exc: BaseException) -> str:
    """One line for ``exc``; an exception group is described by its first real failure."""
    leaves = list(_leaves(exc))
    real = [e for e in leaves if not isinstance(e, asyncio.CancelledError)] or leaves or [exc]
    first = real[0]
    text = str(first).strip().splitlines()[0] if str(first).strip() else ""
    return f"{type(first).__name__}: {text}" if text else type(first).__name__


def _leaves(exc: BaseException) -> Iterable[BaseException]:
    nested = getattr(exc, "exceptions", None)
    if isinstance(nested, tuple) and nested:
        for inner in nested:
            yield from _leaves(inner)
    else:
        yield exc


class McpConnection:
    """A server's state (``starting``, ``ready``, ``failed``, ``stopped``), its tools, and calls to them.

    Built on any thread; :meth:`start`, :meth:`call` and :meth:`stop` run on the agent's loop.
    """

    def __init__(self, spec: ServerSpec, prefix: str) -> None:
        self.spec = spec
        self.prefix = prefix
        self.state: State = "starting"
        self.reason: str | None = None
        """Why the server failed or stopped."""
        self.tools: tuple[dict[str, Any], ...] = ()
        """The server's tools, as it listed them (wire JSON: ``name``, ``inputSchema``…)."""
        self._declined: list[str] = []
        """Notes on elicitation requests declined since the last call ended."""
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._started: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._scope: Any = None
        """The anyio cancel scope of the connection task (its start deadline, and how it is stopped)."""
        self._errlog: TextIO | None = None
        self._stopping = False
        self._unauthorized = False
        """The HTTP server's last answer was a 401."""

    @property
    def name(self) -> str:
        return self.spec.name

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting in the background (on the agent's loop)."""
        if self._task is not None or self._stopping:
            return
        self._started = asyncio.Event()
        self._stop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"nbagent-mcp-{self.name}")

    async def wait_started(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for the server to leave ``starting``."""
        if self.state != "starting" or self._started is None:
            return
        try:
            await asyncio.wait_for(self._started.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    async def stop(self, reason: str = "stopped") -> None:
        """Close the connection and end the server's process (bounded by ``STOP_PATIENCE``).

        The SDK's stdio shutdown (close stdin, wait, terminate, kill) runs shielded from anyio
        cancellation but not from a native ``Task.cancel``, so the task is cancelled through its own
        anyio scope; a native cancel is only the last resort."""
        self._stopping = True
        task = self._task
        if task is not None and not task.done():
            assert self._stop is not None
            self._stop.set()
            if self.state == "starting" and self._scope is not None:
                self._scope.cancel()
            await asyncio.wait({task}, timeout=STOP_PATIENCE)
            if not task.done() and self._scope is not None:
                self._scope.cancel()
                await asyncio.wait({task}, timeout=STOP_PATIENCE)
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=STOP_PATIENCE)
        if self.state in ("starting", "ready"):
            self.state, self.reason = "stopped", reason
        self._close_errlog()
        if self._started is not None:
            self._started.set()

    async def _serve(self) -> None:
        try:
            import anyio

            await asyncio.to_thread(sdk.import_sdk)  # the first import takes a while: not on the agent's loop
            if self._stopping:
                return
            with anyio.CancelScope(deadline=anyio.current_time() + self.spec.start_timeout) as scope:
                self._scope = scope
                await self._connect(scope)
            if scope.cancelled_caught and self.state == "starting" and not self._stopping:
                self._fail(f"did not finish starting within {self.spec.start_timeout:g} s")
        except BaseException as exc:  # the SDK raises exception groups; every failure is the server's
            if not self._stopping:
                self._fail(
                    f"could not start: {self._why(exc)}" if self.state == "starting" else self._why(exc)
                )
            if isinstance(exc, KeyboardInterrupt | SystemExit | asyncio.CancelledError):
                raise
        finally:
            self._client = None
            self._scope = None
            if self._started is not None:
                self._started.set()

    async def _connect(self, scope: Any) -> None:
        """Connect, list the tools, then hold the connection until told to stop."""
        import math
        from importlib.metadata import version

        async with sdk.open_session(
            self._transport(), client_version=version("nbagent"), on_elicitation=self._elicited
        ) as session:
            tools = await _list_tools(session)
            if self._stopping:
                return
            scope.deadline = math.inf
            self._client, self.tools, self.state = session, tools, "ready"
            assert self._started is not None and self._stop is not None
            self._started.set()
            await self._stop.wait()

    async def _elicited(self, message: str) -> None:
        """An elicitation request (declined): the result of the call in flight says so, which the
        turn's cell, the timeline and the model all show."""
        shown = clip(message, 300).replace("\n", " ")
        self._declined.append(
            f"[nbagent: MCP server {self.name!r} asked the user for input ({shown!r}) and nbagent declined; "
            "elicitation is not supported yet]"
        )

    def _fail(self, why: str) -> None:
        if self.state in ("failed", "stopped"):
            return
        tail = self.stderr_tail()
        self.state = "failed"
        reason = f"{why}; its stderr ends: {tail}" if tail else why
        self.reason = hide_values(reason, self.secrets())
        if self._started is not None:
            self._started.set()

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url is not None:
            if spec.sse:
                return sdk.sse_transport(spec.url, spec.headers, self._http_status)
            return sdk.http_transport(spec.url, spec.headers, self._http_status)
        # kept open for the server's life (closed by stop)
        self._errlog = _append_only(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))  # noqa: SIM115
        return sdk.stdio_transport(
            spec.command or "", list(spec.args), server_environment(spec), self._errlog
        )

    def _http_status(self, status: int) -> None:
        self._unauthorized = status == 401

    def _why(self, exc: BaseException) -> str:
        """What went wrong, in the user's terms: a 401 says how to pass credentials."""
        if not self._unauthorized:
            return describe(exc)
        return (
            f"the server at {self.spec.url} answered 401 Unauthorized: it wants credentials; pass them "
            "as headers, add_mcp_server(..., headers={'Authorization': 'Bearer …'}) or \"headers\" in "
            "the config file (OAuth sign-in is not supported yet)"
        )

    def stderr_tail(self) -> str:
        """The last characters a stdio server wrote to stderr (empty for HTTP or silence)."""
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - STDERR_TAIL * 4))
            text = log.read()
        except (OSError, ValueError):
            return ""
        lines = [line for line in text.strip().splitlines() if line.strip()]
        return clip(" | ".join(lines[-6:]), STDERR_TAIL).replace("\n", " ")

    def _trim_errlog(self) -> None:
        """Empty the stderr file of a chatty server once it passes ``STDERR_KEPT`` (append mode: the
        server's later lines start the file again)."""
        log = self._errlog
        try:
            if log is not None and not log.closed and os.fstat(log.fileno()).st_size > STDERR_KEPT:
                os.ftruncate(log.fileno(), 0)
        except OSError:
            pass

    def _close_errlog(self) -> None:
        if self._errlog is not None:
            self._errlog.close()

    # -- calls --------------------------------------------------------------------------------------

    def unavailable(self) -> str:
        """Why the server's tools cannot be called now (for an error result)."""
        if self.state == "starting":
            return f"MCP server {self.name!r} is still starting; try again in a moment"
        if self.state == "stopped":
            return f"MCP server {self.name!r} is {self.reason or 'stopped'}"
        return f"MCP server {self.name!r} failed: {self.reason or 'unknown reason'}"

    def secrets(self) -> list[str]:
        """The values no result of this server may carry: the kernel's secret-looking variables and
        the secret-looking ones ``env`` gives the server."""
        named = [v for k, v in self.spec.env.items() if looks_secret_name(k) and len(v) >= MIN_KNOWN]
        return [*configured_secrets(), *named]

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: sdk.Progress | None = None
    ) -> ToolResult:
        """Call ``tool``; every failure is an error result naming the server and the cause, and no
        result carries a secret's value (:meth:`secrets`). ``progress`` hears the server's progress
        notifications for this call."""
        result = await self._call(tool, arguments, progress)
        if self._declined:
            notes, self._declined = self._declined, []
            result = with_notes(result, notes)
        return hide_secrets(result, self.secrets())

    async def _call(self, tool: str, arguments: dict[str, Any], progress: sdk.Progress | None) -> ToolResult:
        if self.state == "starting":
            await self.wait_started(self.spec.start_timeout)
        client = self._client
        if self.state != "ready" or client is None:
            return _error(f"Error: {self.unavailable()}", "MCP_SERVER_UNAVAILABLE")
        limit = self.spec.call_timeout
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments, limit, progress), limit + 5.0)
        except asyncio.TimeoutError:
            return self._timed_out(tool)
        except Exception as exc:
            code = sdk.error_code(exc) if sdk.is_sdk_error(exc) else None
            if code in sdk.TIMEOUT_CODES:
                return self._timed_out(tool)
            if code == sdk.CONNECTION_CLOSED or self._client is None or self.state != "ready":
                return self._died(tool)
            if code is not None:
                text = getattr(getattr(exc, "error", None), "message", None) or str(exc)
                return _error(f"Error: MCP server {self.name!r} refused {tool}: {text}", "MCP_ERROR")
            return _error(f"Error: MCP server {self.name!r} failed on {tool}: {self._why(exc)}", "MCP_ERROR")
        self._trim_errlog()
        return tool_result(self.name, tool, sdk.wire(result))

    def _timed_out(self, tool: str) -> ToolResult:
        return _error(
            f"Error: MCP server {self.name!r} did not answer {tool} within {self.spec.call_timeout:g} s; "
            "the call was given up (the server keeps running)",
            "MCP_TIMEOUT",
        )

    def _died(self, tool: str) -> ToolResult:
        self._fail(f"the connection ended during a call to {tool} (the server stopped or crashed)")
        if self._stop is not None:
            self._stop.set()  # leave the client's context: the SDK reaps the process
        return _error(f"Error: {self.unavailable()}", "MCP_SERVER_DIED")


def _append_only(log: TextIO) -> TextIO:
    """``log`` with ``O_APPEND`` set (POSIX): the server shares the file offset, so without it reading
    the tail or emptying the file would move where the server writes."""
    try:
        import fcntl

        flags = fcntl.fcntl(log.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
    except (ImportError, OSError):
        pass
    return log


def _error(text: str, code: str) -> ToolResult:
    return ToolResult(text, is_error=True, code=code)


async def _list_tools(session: sdk.Session) -> tuple[dict[str, Any], ...]:
    """Every tool the server lists, as its wire JSON (``inputSchema``, ``annotations``…)."""
    tools: list[dict[str, Any]] = []
    cursor = None
    for _ in range(_MAX_TOOL_PAGES):
        page = sdk.wire(await session.list_tools(cursor))
        tools.extend(t for t in page.get("tools") or () if isinstance(t, dict) and t.get("name"))
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return tuple(tools)
