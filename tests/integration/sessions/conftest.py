"""Fixtures: a live server for the MCP client (the in-process app is in tests/integration/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.mcp.conftest import LiveServer, start_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path)
