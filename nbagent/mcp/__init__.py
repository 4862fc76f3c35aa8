"""MCP servers as tools (SPEC §9.7), with the official ``mcp`` SDK (``pip install "nbagent[mcp]"``).

``agent.add_mcp_server(name, command=..., args=...)`` (stdio) or ``url=...`` (streamable HTTP, ``headers=``) returns at
once; the server starts on the agent's loop and its tools are offered as ``NAME__TOOL`` from the next
request on. Calls are ordinary ``tool/*`` events; each asks for approval unless the server annotates the
tool read-only and read-only tools were allowed. A server that fails to start, hangs or dies gives error
results naming it within bounded time; servers stop when the session closes.

- ``config``: a server's spec, and the common ``{"mcpServers": {...}}`` file
- ``names``: ``SERVER__TOOL`` names reduced to what model APIs accept
- ``sdk``: the ``mcp`` SDK's majors 1.x and 2.x behind one face (sessions, transports, errors)
- ``connection``: one server's client on the agent's loop (start, call, stop)
- ``results``: an MCP tool result as a bounded nbagent tool result
- ``offered``: MCP tools as nbagent tools
- ``servers``: the servers of one agent (``agent.mcp``)
"""

from nbagent.mcp.config import Config, ConfigError, ServerSpec, load_config, server_spec
from nbagent.mcp.servers import McpServers, ServerInfo

__all__ = ["Config", "ConfigError", "McpServers", "ServerInfo", "ServerSpec", "load_config", "server_spec"]
