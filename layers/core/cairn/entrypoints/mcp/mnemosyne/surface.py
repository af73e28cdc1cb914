"""The Mnemosyne surface: server name `mnemosyne`, six tools, failures as FastMCP reports a tool's
exception (a text result with isError true), the instructions naming the tools and library types."""

from __future__ import annotations

from mcp_types import CallToolResult, TextContent

from cairn.entrypoints.mcp.kit import SurfaceDecl
from cairn.entrypoints.mcp.mnemosyne.services import mnemosyne_services
from cairn.entrypoints.mcp.mnemosyne.tools import MNEMOSYNE_TOOLS, TYPES

SERVER_VERSION = "1.0.0"
INSTRUCTIONS = (
    "Mnemosyne (served by Cairn) is a retrieval surface, not a RAG pipeline: it returns ranked "
    "evidence and you synthesise and cite. Workflow: list_libraries -> search(query, library_type=..., "
    "library_uid=...) -> get_chunk(chunk_uid) only when text_preview is not enough. Tools: search, "
    "get_chunk, list_libraries, list_collections, list_items, get_health. Library types: "
    f"{TYPES}. Only items whose embedding_status is completed are searchable."
)


class ToolErrors:
    """Every failure as a tool result with isError and the failure's message as its text."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


SURFACE = SurfaceDecl(
    "mnemosyne",
    version=SERVER_VERSION,
    tools=MNEMOSYNE_TOOLS,
    errors=ToolErrors(),
    services=mnemosyne_services,
    instructions=INSTRUCTIONS,
    nullable_optionals=True,  # FastMCP advertises `str | None = None` as anyOf [string, null]
)
