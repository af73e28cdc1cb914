"""Kept so older imports keep working: the surface-neutral MCP machinery is the kit package."""

from cairn.entrypoints.mcp.kit import SurfaceDeps, SurfaceServer, ToolArgs, clean_schema, ok_result

__all__ = ["SurfaceDeps", "SurfaceServer", "ToolArgs", "clean_schema", "ok_result"]
