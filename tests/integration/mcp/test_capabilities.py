"""initialize on every surface advertises tools and nothing else, as the memory servers Cairn stands in
for do: no prompts, no resources, and a tools list that never changes while the server runs."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio
SURFACES = ["/mcp", "/mcp/zengram", "/mcp/gbrain", "/mcp/mnemosyne", "/mcp/thoughtmcp"]


@pytest.mark.parametrize("path", SURFACES)
async def test_a_surface_advertises_only_its_tools(live: LiveServer, path: str) -> None:
    async with Client(f"{live.base}{path}") as client:
        caps = client.server_capabilities
        assert caps is not None
        assert caps.tools is not None and not caps.tools.list_changed
        assert caps.prompts is None and caps.resources is None
        with pytest.raises(MCPError, match="Method not found"):
            await client.list_prompts()
        with pytest.raises(MCPError, match="Method not found"):
            await client.list_resources()
        assert (await client.list_tools()).tools
