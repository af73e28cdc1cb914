"""The ThoughtMCP surface (`/mcp/thoughtmcp`, `cairn mcp --surface thoughtmcp`): seed 004's tools."""

from cairn.entrypoints.mcp.thoughtmcp.surface import SURFACE, THOUGHTMCP_TOOLS

__all__ = ["SURFACE", "THOUGHTMCP_TOOLS"]
