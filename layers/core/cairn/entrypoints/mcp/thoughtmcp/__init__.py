"""The ThoughtMCP surface (`/mcp/thoughtmcp`, `cairn mcp --surface thoughtmcp`): seed 004's tools."""

from cairn.entrypoints.mcp.thoughtmcp.surface import THOUGHTMCP_SCOPES, THOUGHTMCP_TOOLS, build_thoughtmcp

__all__ = ["THOUGHTMCP_SCOPES", "THOUGHTMCP_TOOLS", "build_thoughtmcp"]
