"""The gbrain surface (`/mcp/gbrain`, `cairn mcp --surface gbrain`): seed 002's 17 `brain_*` tools."""

from cairn.entrypoints.mcp.gbrain.surface import GBRAIN_SCOPES, GBRAIN_TOOLS, build_gbrain

__all__ = ["GBRAIN_SCOPES", "GBRAIN_TOOLS", "build_gbrain"]
