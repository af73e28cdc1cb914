"""The zengram surface (`/mcp/zengram`, `cairn mcp --surface zengram`): seed 001's 13 `brain_*` tools."""

from cairn.entrypoints.mcp.zengram.surface import SURFACE, ZENGRAM_TOOLS

__all__ = ["SURFACE", "ZENGRAM_TOOLS"]
