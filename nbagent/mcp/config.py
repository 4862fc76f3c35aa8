"""What an MCP server is: a command to run (stdio) or a URL (streamable HTTP), and the common
``{"mcpServers": {...}}`` JSON file that lists several (Claude Desktop, Cursor, Jupyter AI, VS Code)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nbagent.mcp.names import check_server_name

START_TIMEOUT = 30.0
"""Seconds a server has to start and list its tools before it counts as failed."""

CALL_TIMEOUT = 300.0
"""Seconds a tool call may take before it is given up with an error result (the server keeps running)."""

FIRST_REQUEST_WAIT = 10.0
"""Seconds the first model request after adding a server waits for its tool list (SPEC §9.7)."""


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server to connect to: exactly one of ``command`` (stdio) and ``url`` (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the SDK's default environment (``PATH``, ``HOME``…) for a stdio server."""
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    """Sent with every request to an HTTP server (``Authorization``, an API key header…)."""
    sse: bool = False
    """The URL speaks the older HTTP+SSE transport (a config entry of ``"type": "sse"``)."""
    allow_read_only: bool = False
    """Tools the server annotates read-only run without asking."""
    start_timeout: float = START_TIMEOUT
    call_timeout: float = CALL_TIMEOUT

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "sse" if self.sse else "http"

    @property
    def target(self) -> str:
        """What it runs or where it lives, as ``%agent mcp list`` shows it."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


def _check_headers(name: str, headers: Any, url: str | None) -> None:
    if url is None:
        raise ValueError(f"MCP server {name!r}: headers= is for an HTTP server (url=), not a command")
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise TypeError(
            f"MCP server {name!r}: headers must map header names to string values, e.g. {{'Authorization': 'Bearer …'}}"
        )


def _check_url(name: str, url: Any) -> None:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"MCP server {name!r}: url {url!r} is not an http:// or https:// URL")


def server_spec(
    name: str,
    *,
    command: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    sse: bool = False,
    allow_read_only: bool = False,
    start_timeout: float = START_TIMEOUT,
    call_timeout: float = CALL_TIMEOUT,
) -> ServerSpec:
    """A checked :class:`ServerSpec`; ``ValueError``/``TypeError`` name what is wrong and how to fix it."""
    name = check_server_name(name)
    if (command is None) == (url is None):
        raise ValueError(
            f"MCP server {name!r}: give either command= (a program speaking MCP on stdio) or url= "
            "(a streamable HTTP endpoint), not both or neither"
        )
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise TypeError(f"MCP server {name!r}: args must be a list of strings, e.g. ['-m', 'my_server']")
    if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise TypeError(f"MCP server {name!r}: env must map names to string values")
    if headers is not None:
        _check_headers(name, headers, url)
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ValueError(f"MCP server {name!r}: command must be a program name or path")
    if url is not None:
        _check_url(name, url)
    for label, value in (("start_timeout", start_timeout), ("call_timeout", call_timeout)):
        if not value > 0:
            raise ValueError(f"MCP server {name!r}: {label} must be more than 0 seconds")
    return ServerSpec(
        name=name,
        command=command,
        args=tuple(args),
        env=dict(env or {}),
        url=url,
        headers=dict(headers or {}),
        sse=bool(sse) and url is not None,
        allow_read_only=bool(allow_read_only),
        start_timeout=float(start_timeout),
        call_timeout=float(call_timeout),
    )


class ConfigError(ValueError):
    """An ``mcpServers`` file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Config:
    """What an ``mcpServers`` file holds: the usable servers, and one line for each entry that
    cannot be used (the others are still added)."""

    servers: list[ServerSpec]
    problems: list[str]


def load_config(path: str | os.PathLike[str]) -> Config:
    """The servers of a ``{"mcpServers": {NAME: {"command", "args", "env"} | {"url", "headers"}}}`` file.

    Entries with ``"disabled": true`` are skipped; keys other clients keep beside these (``autoApprove``
    and the like) are ignored; ``"type": "sse"`` is an HTTP+SSE server. ``${NAME}`` and ``${env:NAME}``
    in ``env`` and ``headers`` values are the kernel's variable ``NAME``, so a file can pass a token
    without holding it. An entry that cannot be used is a line of ``problems``; a file that cannot be
    read at all raises :class:`ConfigError`.
    """
    where = Path(path).expanduser()
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read MCP config {where}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"MCP config {where} is not valid JSON: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(
            f'MCP config {where} has no "mcpServers" object: expected {{"mcpServers": {{...}}}}'
        )
    specs: list[ServerSpec] = []
    problems: list[str] = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            problems.append(f"server {name!r}: must be an object")
            continue
        if entry.get("disabled") is True:
            continue
        try:
            specs.append(_entry_spec(name, entry))
        except (TypeError, ValueError) as exc:
            problems.append(f"server {name!r}: {str(exc).removeprefix(f'MCP server {name!r}: ')}")
    return Config(specs, problems)


_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


def _expanded(label: str, values: Any) -> dict[str, str] | None:
    """``values`` with ``${NAME}``/``${env:NAME}`` replaced by the kernel's variables."""
    if values is None:
        return None
    if not isinstance(values, dict):
        raise TypeError(f"{label} must be an object of names to strings")

    def value_of(match: re.Match[str]) -> str:
        found = os.environ.get(match[1])
        if found is None:
            raise ValueError(
                f"{label} refers to ${{{match[1]}}}, which is not set in the kernel's environment"
            )
        return found

    return {k: _REFERENCE.sub(value_of, v) if isinstance(v, str) else v for k, v in values.items()}


def _entry_spec(name: str, entry: dict[str, Any]) -> ServerSpec:
    kind = entry.get("type") or entry.get("transport")
    if kind not in (None, "stdio", "sse", "http", "streamable-http", "streamable_http", "streamableHttp"):
        raise ValueError(f"unknown type {kind!r}; use stdio, http or sse")
    url = entry.get("url") or entry.get("serverUrl")
    if kind == "sse" and url is None:
        raise ValueError('type sse needs a "url"')
    return server_spec(
        name,
        command=entry.get("command"),
        args=entry.get("args") or (),
        env=_expanded("env", entry.get("env")),
        url=url,
        headers=_expanded("headers", entry.get("headers")),
        sse=kind == "sse",
    )
