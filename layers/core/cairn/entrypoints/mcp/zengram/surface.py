"""The zengram surface: server name `zengram`, tools only, failures as zengram's wrapper shows them."""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult

from cairn.entrypoints.mcp.kit import SurfaceDeps, SurfaceServer, ToolSpec, container_audit
from cairn.entrypoints.mcp.zengram.tools import ZENGRAM_TOOLS, local_error, text

SERVER_VERSION = "4.3.0"
"""The zengram release whose tools this surface serves (the seed's)."""
ZENGRAM_SCOPES = {spec.name: spec.scope for spec in ZENGRAM_TOOLS}


class WrapperErrors:
    """Failures the way zengram's wrapper answers them: text results with isError, never JSON-RPC
    errors; an unknown tool is `Unknown tool: <name>`."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        if code == "unknown_tool":
            return text(f"Unknown tool: {message.removeprefix('unknown tool: ')}", error=True)
        return local_error(message)


def build_zengram(deps: SurfaceDeps) -> SurfaceServer:
    tools: tuple[ToolSpec[Any], ...] = ZENGRAM_TOOLS
    return SurfaceServer(
        "zengram",
        version=SERVER_VERSION,
        tools=tools,
        deps=deps,
        errors=WrapperErrors(),
        audit=container_audit(deps.container),
    )
