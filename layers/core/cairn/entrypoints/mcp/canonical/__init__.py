"""The canonical surface (`/mcp`, `cairn mcp`): Jeffs Brain's `memory_*` tools (surface.py)."""

from cairn.entrypoints.mcp.canonical.surface import CANONICAL_TOOLS, SURFACE

__all__ = ["CANONICAL_TOOLS", "SURFACE"]
