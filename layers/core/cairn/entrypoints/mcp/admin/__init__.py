"""The admin surface (`/mcp/admin`, `cairn mcp --surface admin`): brain owners and visibility."""

from cairn.entrypoints.mcp.admin.surface import ADMIN_SCOPES, ADMIN_TOOLS, build_admin

__all__ = ["ADMIN_SCOPES", "ADMIN_TOOLS", "build_admin"]
