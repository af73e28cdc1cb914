"""The gbrain surface on a live server (fake adapters) and helpers for the official MCP client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from tests.integration.mcp.conftest import LiveServer, start_server

PATH = "/mcp/gbrain"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path)


def gbrain(live: LiveServer) -> Client:
    return Client(f"{live.base}{PATH}")


def text(result: CallToolResult) -> str:
    assert not result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    return block.text


def body(result: CallToolResult) -> Any:
    """A JSON answer, which gbrain pretty-prints with a 2-space indent."""
    raw = text(result)
    value = json.loads(raw)
    assert raw == json.dumps(value, indent=2, ensure_ascii=False)
    return value


async def refused(client: Client, tool: str, args: dict[str, Any]) -> MCPError:
    """The JSON-RPC error a call answers with (gbrain never answers isError)."""
    try:
        result = await client.call_tool(tool, args)
    except MCPError as exc:
        return exc
    raise AssertionError(f"{tool} answered {result.content!r} instead of a JSON-RPC error")


def page(title: str, body_text: str, *, timeline: str = "", **frontmatter: str) -> str:
    lines = [f"title: {title}", *(f"{k}: {v}" for k, v in frontmatter.items())]
    return "---\n" + "\n".join(lines) + f"\n---\n{body_text}\n---\n{timeline}"
