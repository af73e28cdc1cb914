"""The Mnemosyne surface: server name `mnemosyne`, six tools, failures as FastMCP reports a tool's
exception (a text result with isError true), the instructions naming the tools and library types.

A call without a credential reaches a tool other than get_health only on an open loopback server
(one with no authentication configured: entrypoints/auth_http.py); a server with authentication
asks for sign-in (401) before any tool runs. There the seed's contract stands (every tool but
get_health needs a bearer token), and the refusal says what to send: any token, since an open server
accepts every one."""

from __future__ import annotations

from mcp_types import CallToolResult, TextContent

from cairn.entrypoints.mcp.kit import SurfaceDecl
from cairn.entrypoints.mcp.mnemosyne.descriptions import INSTRUCTIONS
from cairn.entrypoints.mcp.mnemosyne.services import mnemosyne_services
from cairn.entrypoints.mcp.mnemosyne.tools import MNEMOSYNE_TOOLS

SERVER_VERSION = "1.0.0"
OPEN_SERVER_SIGN_IN = (
    "authentication required: send Authorization: Bearer <token>. This server has no "
    "authentication configured, so any non-empty token is accepted (for example "
    "`Authorization: Bearer local`)."
)


class ToolErrors:
    """Every failure as a tool result with isError and the failure's message as its text."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        if code == "unauthorized":  # no credential, past the HTTP layer: an open server (docstring)
            message = OPEN_SERVER_SIGN_IN
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
