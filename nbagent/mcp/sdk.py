"""The official ``mcp`` SDK's two majors behind one small face (SPEC §9.7: 1.x, which Jupyter AI 3
installs through fastmcp, and 2.x).

2.x connects with ``mcp.Client``; 1.x with a ``ClientSession`` over the transport's streams and an
``initialize``. Both give :func:`open_session` a connected session with ``list_tools`` and
``call_tool``; the transports (stdio, streamable HTTP with headers, SSE) and the callbacks nbagent
passes (elicitation, progress) are the same functions in both.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol, TextIO

TIMEOUT_CODES = frozenset({-32001, 408})
"""The error codes of a request that got no answer in time (2.x's ``REQUEST_TIMEOUT``, 1.x's HTTP 408)."""

CONNECTION_CLOSED = -32000

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""``(progress, total, message)`` for each progress notification of a call."""

Elicitation = Callable[[str], Awaitable[None]]
"""Told the message of each elicitation request (which is declined)."""


class Session(Protocol):
    """What nbagent uses of a connected server."""

    async def list_tools(self, cursor: str | None) -> Any: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float, progress: Progress | None
    ) -> Any: ...


@lru_cache(maxsize=1)
def sdk_major() -> int:
    """The installed SDK's major version (1 or 2)."""
    try:
        return int(version("mcp").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 2


def import_sdk() -> None:
    """Import the SDK's client modules (about a second, once per process)."""
    for module in ("mcp", "mcp.types", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.sse"):
        importlib.import_module(module)


def default_environment() -> dict[str, str]:
    """The SDK's default environment for a stdio server (``PATH``, ``HOME``, ``USER``, locale…)."""
    from mcp.client.stdio import get_default_environment

    return dict(get_default_environment())


def wire(record: Any) -> dict[str, Any]:
    """An SDK record as its JSON on the wire (the same camelCase names in 1.x and 2.x)."""
    dumped = record.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped if isinstance(dumped, dict) else {}


def error_code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an SDK error (2.x ``MCPError``, 1.x ``McpError``), else ``None``."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else None


def is_sdk_error(exc: BaseException) -> bool:
    import mcp

    kind = getattr(mcp, "MCPError", None) or getattr(mcp, "McpError", None)
    return kind is not None and isinstance(exc, kind)


def stdio_transport(command: str, args: list[str], env: Mapping[str, str], errlog: TextIO) -> Any:
    """The SDK's stdio transport: runs ``command`` with exactly ``env``."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, env=dict(env))
    return stdio_client(params, errlog=errlog)


def _http_clients(on_status: Callable[[int], None]) -> Callable[..., Any]:
    """The SDK's HTTP client factory, with each response's status told to ``on_status`` (the SDK
    turns a 401 into a generic error; nbagent says what it means)."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def seen(response: Any) -> None:
        on_status(int(response.status_code))

    def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        client.event_hooks["response"].append(seen)
        return client

    return factory


@asynccontextmanager
async def http_transport(
    url: str, headers: Mapping[str, str], on_status: Callable[[int], None]
) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport, sending ``headers`` with every request."""
    from mcp.client.streamable_http import streamable_http_client

    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(_http_clients(on_status)(headers=dict(headers) or None))
        streams = await stack.enter_async_context(streamable_http_client(url, http_client=client))
        yield streams


def sse_transport(url: str, headers: Mapping[str, str], on_status: Callable[[int], None]) -> Any:
    """The SDK's (legacy) HTTP+SSE transport, sending ``headers`` with every request."""
    from mcp.client.sse import sse_client

    return sse_client(url, headers=dict(headers) or None, httpx_client_factory=_http_clients(on_status))


@asynccontextmanager
async def open_session(
    transport: Any, *, client_version: str, on_elicitation: Elicitation
) -> AsyncIterator[Session]:
    """A connected, initialized session over ``transport``; elicitation requests are declined (and
    ``on_elicitation`` told their message). Entered and left in one task, as anyio requires."""
    from mcp.types import ElicitResult, Implementation

    info = Implementation(name="nbagent", version=client_version)

    async def decline(context: Any, params: Any) -> Any:  # the SDK's ElicitationFnT names them
        await on_elicitation(str(getattr(params, "message", "") or ""))
        return ElicitResult(action="decline")

    if sdk_major() >= 2:
        from mcp import Client

        async with Client(transport, client_info=info, elicitation_callback=decline) as client:
            yield _Session(client, float)
        return
    from mcp import ClientSession

    async with transport as streams:
        read, write = streams[0], streams[1]  # 1.x's streamable HTTP adds a session-id getter
        async with ClientSession(read, write, client_info=info, elicitation_callback=decline) as session:
            await session.initialize()
            yield _Session(session, lambda seconds: timedelta(seconds=seconds))


class _Session:
    """2.x's ``mcp.Client`` or 1.x's ``mcp.ClientSession``: the same two calls, the timeout given as
    each major takes it (seconds, or a ``timedelta`` in 1.x)."""

    def __init__(self, client: Any, timeout: Callable[[float], Any]) -> None:
        self._client = client
        self._timeout = timeout

    async def list_tools(self, cursor: str | None) -> Any:
        return await self._client.list_tools(cursor=cursor)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float, progress: Progress | None
    ) -> Any:
        return await self._client.call_tool(
            name, arguments, read_timeout_seconds=self._timeout(timeout), progress_callback=progress
        )
