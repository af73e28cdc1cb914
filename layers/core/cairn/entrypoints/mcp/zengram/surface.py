"""The zengram surface: server name `zengram`, tools only, failures as zengram's wrapper shows them."""

from __future__ import annotations

from mcp_types import CallToolResult

from cairn.entrypoints.mcp.kit import SurfaceDecl
from cairn.entrypoints.mcp.zengram.services import zengram_services
from cairn.entrypoints.mcp.zengram.tools import ZENGRAM_TOOLS, local_error, text

SERVER_VERSION = "4.3.0"
"""The zengram release whose tools this surface serves (the seed's)."""


class WrapperErrors:
    """Failures the way zengram's wrapper answers them: text results with isError, never JSON-RPC
    errors; an unknown tool is `Unknown tool: <name>`."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        if code == "unknown_tool":
            return text(f"Unknown tool: {message.removeprefix('unknown tool: ')}", error=True)
        return local_error(message)


SURFACE = SurfaceDecl(
    "zengram",
    version=SERVER_VERSION,
    tools=ZENGRAM_TOOLS,
    errors=WrapperErrors(),
    services=zengram_services,
)
