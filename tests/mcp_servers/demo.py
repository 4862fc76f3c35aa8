"""A small MCP server for the tests, written with the official SDK: ``python demo.py`` speaks stdio,
``python demo.py --http PORT`` streamable HTTP on 127.0.0.1, ``--sse PORT`` HTTP+SSE, and with
``--token T`` either wants ``Authorization: Bearer T`` (a 401 otherwise); other arguments, such as a ``--tag`` that
lets a test find the process, are ignored).

Its tools cover what nbagent must handle: a read-only tool, a tool that changes something (it appends
to the file named by ``DEMO_NOTES``), an image, an oversized text, a tool error, a crash mid-call and a
call that never gets an answer.
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
from mcp.types import ToolAnnotations
from pydantic import BaseModel

try:  # the SDK's 2.x names
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.utilities.types import Image
except ImportError:  # 1.x (what Jupyter AI 3 installs)
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.server.fastmcp.utilities.types import Image

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

READ_ONLY = ToolAnnotations.model_validate({"readOnlyHint": True})  # the wire name, in 1.x and 2.x
# 1.x's FastMCP logs each request to stderr unless told otherwise
server = MCPServer("demo", log_level="WARNING") if MCPServer.__name__ == "FastMCP" else MCPServer("demo")


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"{a} + {b} = {a + b}"


@server.tool()
def write_note(text: str) -> str:
    """Append a note to the notes file (changes something, so it is not read-only)."""
    with open(os.environ["DEMO_NOTES"], "a", encoding="utf-8") as f:
        f.write(text + "\n")
    return f"noted: {text}"


@server.tool(annotations=READ_ONLY)
def pixel() -> Image:
    """A one-pixel PNG."""
    return Image(data=PIXEL, format="png")


@server.tool(annotations=READ_ONLY)
def flood(chars: int) -> str:
    """``chars`` characters of text."""
    return "x" * chars


@server.tool()
def refuse(why: str) -> str:
    """Fail with ``why`` (a tool error, reported in the result)."""
    raise ToolError(why)


@server.tool()
def crash() -> str:
    """End the server's process in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool(annotations=READ_ONLY)
def chatter(lines: int) -> str:
    """Write ``lines`` lines to stderr (a chatty server's log)."""
    for i in range(lines):
        print(f"log line {i}", file=sys.stderr)
    sys.stderr.flush()
    return f"wrote {lines} lines"


@server.tool(annotations=READ_ONLY)
def environment(name: str) -> str:
    """The value of environment variable ``name`` in the server's process."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=READ_ONLY)
def printenv() -> str:
    """The server process's whole environment, one ``NAME=value`` a line."""
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


@server.tool(annotations=READ_ONLY)
async def slow(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, then answer."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
    return f"did {steps} steps"


class Contact(BaseModel):
    email: str


@server.tool(annotations=READ_ONLY)
async def ask(ctx: Context) -> str:
    """Ask the user for an email address (an elicitation request)."""
    answer = await ctx.elicit(message="Which email address should I use?", schema=Contact)
    return f"elicitation answered: {answer.action}"


def http_app(sse: bool) -> Any:
    """The server as an ASGI app: streamable HTTP at ``/mcp``, or HTTP+SSE at ``/sse``."""
    if hasattr(server.settings, "port"):  # 1.x takes the address from its settings
        return server.sse_app() if sse else server.streamable_http_app()
    return server.sse_app(host="127.0.0.1") if sse else server.streamable_http_app(host="127.0.0.1")


def requiring(token: str, app: Any) -> Any:
    """``app`` behind a check of ``Authorization: Bearer TOKEN``: anything else gets a 401."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != f"Bearer {token}".encode()
        ):
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"www-authenticate", b"Bearer")]}
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


def option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


if __name__ == "__main__":
    port = option("--http") or option("--sse")
    if port is not None:
        import uvicorn

        app = http_app(sse="--sse" in sys.argv)
        token = option("--token")
        if token is not None:
            app = requiring(token, app)
        uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    else:
        server.run()
