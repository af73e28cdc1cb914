"""The zengram surface on a live server (fake adapters), and how its MCP answers are read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult

from tests.integration.mcp.conftest import LiveServer, start_server


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path)


def body(result: CallToolResult) -> Any:
    """A successful tool answer's JSON."""
    assert not result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    return json.loads(block.text)


def failure(result: CallToolResult) -> str:
    """A failed tool answer's text (zengram's `Error: API …` line)."""
    assert result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    return block.text
