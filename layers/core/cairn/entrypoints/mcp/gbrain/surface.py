"""The gbrain surface: server name `gbrain`, tools only, every failure a JSON-RPC error."""

from __future__ import annotations

from typing import Any

from cairn.entrypoints.mcp.gbrain.errors import GbrainErrors
from cairn.entrypoints.mcp.gbrain.tools import GBRAIN_TOOLS
from cairn.entrypoints.mcp.kit import SurfaceDeps, SurfaceServer, ToolSpec, container_audit

SERVER_VERSION = "0.9.8"
"""The gbrain release whose tools this surface serves (the last one named gbrain)."""
INSTRUCTIONS = "Cairn serving gbrain's brain_* tools: pages, links, gaps and raw data on Cairn brains."
GBRAIN_SCOPES = {spec.name: spec.scope for spec in GBRAIN_TOOLS}


def build_gbrain(deps: SurfaceDeps) -> SurfaceServer:
    tools: tuple[ToolSpec[Any], ...] = GBRAIN_TOOLS
    return SurfaceServer(
        "gbrain",
        version=SERVER_VERSION,
        tools=tools,
        deps=deps,
        errors=GbrainErrors(),
        audit=container_audit(deps.container),
    )
