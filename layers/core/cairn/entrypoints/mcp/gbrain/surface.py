"""The gbrain surface: server name `gbrain`, tools only, every failure a JSON-RPC error, and
instructions at initialize (gbrain sends a one-line description of itself there)."""

from __future__ import annotations

from cairn.entrypoints.mcp.gbrain.descriptions import INSTRUCTIONS
from cairn.entrypoints.mcp.gbrain.errors import GbrainErrors
from cairn.entrypoints.mcp.gbrain.services import gbrain_services
from cairn.entrypoints.mcp.gbrain.tools import GBRAIN_TOOLS
from cairn.entrypoints.mcp.kit import SurfaceDecl

SERVER_VERSION = "0.9.8"
"""The gbrain release whose tools this surface serves (the last one named gbrain)."""


SURFACE = SurfaceDecl(
    "gbrain",
    version=SERVER_VERSION,
    tools=GBRAIN_TOOLS,
    errors=GbrainErrors(),
    services=gbrain_services,
    instructions=INSTRUCTIONS,
    decode_json_strings=False,  # gbrain's typed parameters refuse "[\"x\"]" for a list
)
