"""The canonical surface (`/mcp`, `cairn mcp`): Jeffs Brain's `memory_*` tools (surface.py)."""

from cairn.entrypoints.mcp.canonical.errors import JsonToolErrors, error_result
from cairn.entrypoints.mcp.canonical.surface import CANONICAL_SCOPES, CANONICAL_TOOLS, build_canonical

__all__ = ["CANONICAL_SCOPES", "CANONICAL_TOOLS", "JsonToolErrors", "build_canonical", "error_result"]
