"""The gbrain surface (`/mcp/gbrain`, `cairn mcp --surface gbrain`): seed 002's 17 `brain_*` tools."""

from cairn.entrypoints.mcp.gbrain.surface import GBRAIN_TOOLS, SURFACE

__all__ = ["GBRAIN_TOOLS", "SURFACE"]
