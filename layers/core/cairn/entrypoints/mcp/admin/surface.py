"""The admin surface (`/mcp/admin`, `cairn mcp --surface admin`): who owns a brain and who else may
see it, deleting a brain, erasing a subject. Cairn's own tools, apart from the memory surfaces
agents are configured for. Its failures read as the canonical surface's do."""

from __future__ import annotations

from typing import Any

from cairn import __version__
from cairn.entrypoints.mcp.admin.services import admin_services
from cairn.entrypoints.mcp.admin.tools import (
    ADMIN_DELETE_BRAIN,
    ADMIN_ERASE_SUBJECT,
    ADMIN_LIST_BRAINS,
    ADMIN_UPDATE_BRAIN,
)
from cairn.entrypoints.mcp.kit import JsonToolErrors, SurfaceDecl, ToolSpec

ADMIN_TOOLS: tuple[ToolSpec[Any], ...] = (
    ADMIN_LIST_BRAINS,
    ADMIN_UPDATE_BRAIN,
    ADMIN_DELETE_BRAIN,
    ADMIN_ERASE_SUBJECT,
)


SURFACE = SurfaceDecl(
    "cairn-admin",
    version=__version__,
    tools=ADMIN_TOOLS,
    errors=JsonToolErrors(),
    services=admin_services,
)
