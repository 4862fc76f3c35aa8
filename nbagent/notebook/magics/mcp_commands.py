"""``%agent mcp add|load|list|remove``: the kernel's MCP servers (SPEC §9.7).

The servers added in a kernel belong to the kernel, not to one session: every session opened or resumed
here (``%agent new``, ``%agent resume``, the lazy first open) gets them, each with its own server
processes, stopped when that session closes or the kernel shuts down::

    %agent mcp add files -- npx -y @modelcontextprotocol/server-filesystem .
    %agent mcp add docs http://127.0.0.1:8000/mcp
    %agent mcp load mcp.json
    %agent mcp list
    %agent mcp remove files
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from nbagent.mcp.config import ConfigError, ServerSpec, load_config, server_spec

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.mcp.servers import ServerInfo
    from nbagent.notebook.kernel.kernel_session import KernelSession

USAGE = (
    "use %agent mcp add NAME -- COMMAND ARGS…, %agent mcp add NAME URL, %agent mcp load PATH, "
    "%agent mcp list or %agent mcp remove NAME"
)


class NotebookMcp:
    """The MCP servers added in this kernel, given to every session it opens."""

    def __init__(self) -> None:
        self.specs: dict[str, ServerSpec] = {}

    def equip(self, agent: Agent) -> None:
        """Add every server to a freshly opened or resumed agent (a server that clashes is reported)."""
        for spec in self.specs.values():
            try:
                agent.mcp.add(spec)
            except (ImportError, ValueError) as exc:
                print(f"nbagent: MCP server {spec.name!r} not added: {exc}")


def command(session: KernelSession, servers: NotebookMcp, line: str) -> None:
    """Run ``%agent mcp …`` (``line``: what follows ``mcp``)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%agent mcp: {exc}") from None
    if not words:
        raise UsageError(USAGE)
    verb, rest = words[0], words[1:]
    if verb == "add":
        _add(session, servers, _spec_of(rest))
    elif verb == "load" and len(rest) == 1:
        _load(session, servers, rest[0])
    elif verb == "list" and not rest:
        _list(session, servers)
    elif verb == "remove" and len(rest) == 1:
        _remove(session, servers, rest[0])
    else:
        raise UsageError(USAGE)


def _spec_of(words: list[str]) -> ServerSpec:
    if len(words) >= 3 and words[1] == "--":
        name, program = words[0], words[2:]
        try:
            return server_spec(name, command=program[0], args=program[1:])
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
    if len(words) == 2 and "://" in words[1]:
        try:
            return server_spec(words[0], url=words[1])
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
    raise UsageError(USAGE)


def _add(session: KernelSession, servers: NotebookMcp, spec: ServerSpec) -> None:
    if spec.name in servers.specs:
        raise UsageError(
            f"an MCP server named {spec.name!r} is already added; %agent mcp remove {spec.name} first"
        )
    agent = session.ensure()
    assert agent is not None
    try:
        info = agent.mcp.add(spec)
    except (ImportError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    servers.specs[spec.name] = spec
    print(
        f"nbagent: MCP server {spec.name!r} ({info.transport}: {info.target}) is starting; "
        f"its tools are offered as {spec.name}__… from the next request on (%agent mcp list shows them)"
    )


def _load(session: KernelSession, servers: NotebookMcp, path: str) -> None:
    where = Path(path).expanduser()
    try:
        config = load_config(where)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    for problem in config.problems:
        print(f"nbagent: {where}: MCP {problem}; not added")
    if not config.servers and not config.problems:
        print(f"nbagent: {where} lists no enabled MCP server")
        return
    for spec in config.servers:
        if spec.name in servers.specs:
            print(f"nbagent: MCP server {spec.name!r} is already added; skipped")
            continue
        try:
            _add(session, servers, spec)
        except UsageError as exc:
            print(f"nbagent: MCP server {spec.name!r} not added: {exc}")


def _list(session: KernelSession, servers: NotebookMcp) -> None:
    if not servers.specs:
        print("nbagent: no MCP servers (%agent mcp add NAME -- COMMAND ARGS…, or %agent mcp load PATH)")
        return
    agent = session.current()
    live = {s.name: s for s in agent.mcp.list()} if agent is not None else {}
    print("MCP servers:")
    for spec in servers.specs.values():
        info = live.get(spec.name)
        print("\n".join(_lines(spec, info)))


def _lines(spec: ServerSpec, info: ServerInfo | None) -> list[str]:
    if info is None:
        return [f"  {spec.name} · {spec.transport} · {spec.target} · not started (no session open)"]
    lines = [f"  {spec.name} · {info.transport} · {info.target} · {info.state}"]
    if info.reason and info.state == "failed":
        lines.append(f"    why: {info.reason}")
    if info.tools:
        lines.append(f"    tools: {', '.join(info.tools)}")
    elif info.state == "ready":
        lines.append("    tools: none")
    lines.extend(f"    not offered: {s}" for s in info.skipped)
    return lines


def _remove(session: KernelSession, servers: NotebookMcp, name: str) -> None:
    if servers.specs.pop(name, None) is None:
        known = ", ".join(servers.specs) or "none"
        raise UsageError(f"no MCP server named {name!r} (servers: {known})")
    agent = session.current()
    if agent is not None:
        session.run(agent.mcp.remove(name))
    print(f"nbagent: MCP server {name!r} removed; its tools are withdrawn from the next request on")
