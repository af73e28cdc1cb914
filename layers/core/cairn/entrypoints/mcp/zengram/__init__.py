"""The zengram surface (`/mcp/zengram`, `cairn mcp --surface zengram`): seed 001's 13 `brain_*` tools."""

from cairn.entrypoints.mcp.zengram.surface import ZENGRAM_SCOPES, ZENGRAM_TOOLS, build_zengram

__all__ = ["ZENGRAM_SCOPES", "ZENGRAM_TOOLS", "build_zengram"]
