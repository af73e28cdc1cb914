"""The Mnemosyne surface (`/mcp/mnemosyne/`, `cairn mcp --surface mnemosyne`): seed 003's six tools."""

from cairn.entrypoints.mcp.mnemosyne.surface import MNEMOSYNE_TOOLS, SURFACE

__all__ = ["MNEMOSYNE_TOOLS", "SURFACE"]
