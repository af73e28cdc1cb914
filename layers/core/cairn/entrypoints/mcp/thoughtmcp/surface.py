"""The ThoughtMCP surface: server name `thoughtmcp`, the seed's 13 tools plus the three batch tools,
answers in ThoughtMCP's envelope (envelope.py)."""

from __future__ import annotations

from typing import Any

from cairn.entrypoints.mcp.kit import SurfaceDecl, ToolSpec
from cairn.entrypoints.mcp.thoughtmcp.envelope import ThoughtErrors, refused
from cairn.entrypoints.mcp.thoughtmcp.reasoning import REASONING_TOOLS
from cairn.entrypoints.mcp.thoughtmcp.services import thought_services
from cairn.entrypoints.mcp.thoughtmcp.tools import MEMORY_TOOLS

SERVER_VERSION = "0.6.0"
"""The ThoughtMCP release whose tools this surface serves."""
THOUGHTMCP_TOOLS: tuple[ToolSpec[Any], ...] = (*MEMORY_TOOLS, *REASONING_TOOLS)


SURFACE = SurfaceDecl(
    "thoughtmcp",
    version=SERVER_VERSION,
    tools=THOUGHTMCP_TOOLS,
    errors=ThoughtErrors(),
    services=thought_services,
    refused=refused,  # its refusals are normal results with `success: false`: never audited
)
