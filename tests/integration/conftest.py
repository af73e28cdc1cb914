"""Fixtures shared by the integration tests: the app in-process on the fakes, a client, a brain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import LiveServer, start_server


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.fixture
def client(container: Container) -> Iterator[TestClient]:
    with TestClient(create_app(container), base_url="http://localhost") as test_client:
        yield test_client


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Notes", slug="notes")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    """A real server on a free 127.0.0.1 port, driven by the official MCP client or httpx."""
    yield from start_server(tmp_path)
