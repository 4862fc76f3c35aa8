"""A tiny MCP server for the agent-in-the-notebook tutorial, written with the official ``mcp`` SDK.

It speaks MCP over stdio (``python pallets_mcp_server.py``) and offers one read-only tool; nbagent
starts it from ``%agent mcp add`` and stops it with the session.
"""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("pallets")

BOXES_PER_PALLET = 60


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def boxes_to_pallets(boxes: int) -> str:
    """How many pallets ``boxes`` boxes fill (60 boxes to a pallet), and how many boxes are left over."""
    full, left = divmod(boxes, BOXES_PER_PALLET)
    return f"{boxes} boxes fill {full} pallets with {left} boxes left over"


if __name__ == "__main__":
    server.run()
