"""A small MCP server for the tests, written with the official SDK: ``python demo.py`` speaks stdio,
``python demo.py --http PORT`` streamable HTTP on 127.0.0.1 (other arguments, such as a ``--tag`` that
lets a test find the process, are ignored).

Its tools cover what nbagent must handle: a read-only tool, a tool that changes something (it appends
to the file named by ``DEMO_NOTES``), an image, an oversized text, a tool error, a crash mid-call and a
call that never gets an answer.
"""

from __future__ import annotations

import base64
import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("demo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"{a} + {b} = {a + b}"


@server.tool()
def write_note(text: str) -> str:
    """Append a note to the notes file (changes something, so it is not read-only)."""
    with open(os.environ["DEMO_NOTES"], "a", encoding="utf-8") as f:
        f.write(text + "\n")
    return f"noted: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pixel() -> Image:
    """A one-pixel PNG."""
    return Image(data=PIXEL, format="png")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
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


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def chatter(lines: int) -> str:
    """Write ``lines`` lines to stderr (a chatty server's log)."""
    for i in range(lines):
        print(f"log line {i}", file=sys.stderr)
    sys.stderr.flush()
    return f"wrote {lines} lines"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def environment(name: str) -> str:
    """The value of environment variable ``name`` in the server's process."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def printenv() -> str:
    """The server process's whole environment, one ``NAME=value`` a line."""
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=port))
    else:
        server.run()
