"""Tool names for MCP tools: ``SERVER__TOOL``, reduced to ``[A-Za-z0-9_-]`` and at most 64 characters.

Model APIs accept tool names of that shape only. A name that had to change (a character outside the
set, or too long) gets a short stable hash of what it was, so two tools that reduce alike stay apart
and the same tool gets the same name in every session.
"""

from __future__ import annotations

import hashlib
import re

SEPARATOR = "__"
MAX_TOOL_NAME = 64
MAX_PREFIX = 32
"""Characters at most of a server's prefix, so its tools keep room for their own names."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def reduce_name(text: str, limit: int) -> str:
    """``text`` with unsafe characters replaced by ``_``, cut to ``limit`` characters; a changed name ends
    with ``_`` and a hash of the original."""
    safe = _UNSAFE.sub("_", text)
    if safe == text and 0 < len(text) <= limit:
        return text
    digest = _digest(text)
    return f"{safe[: max(0, limit - len(digest) - 1)]}_{digest}".lstrip("_") or digest


def server_prefix(server: str) -> str:
    """The prefix of a server's tool names (its name, reduced)."""
    return reduce_name(server, MAX_PREFIX)


def tool_name(prefix: str, tool: str) -> str:
    """The name the model sees for ``tool`` of the server with ``prefix``."""
    head = prefix + SEPARATOR
    return head + reduce_name(tool, MAX_TOOL_NAME - len(head))


def check_server_name(server: str) -> str:
    """``server`` stripped; a clear ``ValueError`` for a name nobody could type back."""
    if not isinstance(server, str):
        raise TypeError(f"an MCP server's name is a str, not {type(server).__name__}")
    name = server.strip()
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"MCP server name {server!r} must be one word, e.g. 'files' or 'github'")
    return name
