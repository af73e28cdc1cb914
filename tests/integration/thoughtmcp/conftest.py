"""The ThoughtMCP surface on a live server (fake adapters) and helpers for the official MCP client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.integration.mcp.conftest import LiveServer, start_server

PATH = "/mcp/thoughtmcp"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, rate_limit_per_s=0)


def thought(live: LiveServer, credential: str | None = None) -> Client:
    if credential is None:
        return Client(f"{live.base}{PATH}")
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {credential}"}, timeout=60)
    return Client(streamable_http_client(f"{live.base}{PATH}", http_client=http))


def envelope(result: CallToolResult) -> dict[str, Any]:
    """The JSON envelope of a result, pretty-printed with a 2-space indent, no structuredContent."""
    block = result.content[0]
    assert block.type == "text"
    value: dict[str, Any] = json.loads(block.text)
    assert block.text == json.dumps(value, indent=2, ensure_ascii=False)
    assert result.structured_content is None
    return value


def data(result: CallToolResult) -> Any:
    value = envelope(result)
    assert not result.is_error and value["success"] is True, value
    return value["data"]


def refused(result: CallToolResult) -> dict[str, Any]:
    """A failure the tool reports: a normal result with success false."""
    value = envelope(result)
    assert not result.is_error and value["success"] is False, value
    return value
