"""The Mnemosyne surface (`/mcp/mnemosyne/`, `cairn mcp --surface mnemosyne`): seed 003's six tools."""

from cairn.entrypoints.mcp.mnemosyne.surface import MNEMOSYNE_SCOPES, MNEMOSYNE_TOOLS, build_mnemosyne

__all__ = ["MNEMOSYNE_SCOPES", "MNEMOSYNE_TOOLS", "build_mnemosyne"]
