"""The admin surface (`/mcp/admin`, `cairn mcp --surface admin`): brain owners and visibility."""

from cairn.entrypoints.mcp.admin.surface import ADMIN_TOOLS, SURFACE

__all__ = ["ADMIN_TOOLS", "SURFACE"]
