"""A full disk or a damaged database found while serving is said as such on every surface, never
as an internal error: Problem+JSON 503 with Retry-After under /v1, zengram's 503 `{"error"}`, and
the MCP tool error's own code; the disk's error text is not the caller's."""

from __future__ import annotations

import errno
import json
import sqlite3
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp_types import CallToolResult, TextContent

from cairn.auth.principal import READ
from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp.kit import SurfaceDeps, SurfaceServer, ToolArgs, ToolSpec
from cairn.entrypoints.mcp.thoughtmcp.envelope import ThoughtErrors
from cairn.ports.records import Item
from cairn.services.brain_slugs import slug_key
from cairn.services.ingest.inputs import LocalFilePolicy
from cairn.services.zengram.api import ZengramApi
from tests.integration.rest.helpers import assert_problem, docs_url


def disk_full(*args: object, **kwargs: object) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device: '/srv/cairn/blobs/x'")


def malformed(*args: object, **kwargs: object) -> Any:
    error = sqlite3.DatabaseError("database disk image is malformed")
    error.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
    raise error


def test_a_full_disk_is_503_storage_full_with_retry_after(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(container.documents, "write", disk_full)
    with TestClient(create_app(container), base_url="http://localhost", raise_server_exceptions=False) as c:
        response = c.put(
            docs_url("notes"),
            params={"path": "a.md"},
            content=b"# A\n\nhello\n",
            headers={"content-type": "application/octet-stream"},
        )
    body = assert_problem(response, 503, "storage_full")
    assert "disk is full" in body["detail"] and "/srv/cairn" not in response.text
    assert int(response.headers["Retry-After"]) > 0


def test_a_damaged_database_is_503_damaged_store(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(container.documents, "read_or_link", malformed)
    with TestClient(create_app(container), base_url="http://localhost", raise_server_exceptions=False) as c:
        response = c.get(docs_url("notes", "/read"), params={"path": "a.md"})
    body = assert_problem(response, 503, "damaged_store")
    assert "cairn check" in body["detail"]


def test_zengram_answers_a_full_disk_with_its_503(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ZengramApi, "health", disk_full)
    with TestClient(create_app(container), base_url="http://localhost", raise_server_exceptions=False) as c:
        response = c.get("/zengram/health")
    assert response.status_code == 503 and "disk is full" in response.json()["error"]
    assert response.headers["Retry-After"]


class NoArgs(ToolArgs):
    pass


class TextErrors:
    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"{code}: {message}")], is_error=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_an_mcp_tool_on_a_full_disk_fails_with_storage_full() -> None:
    tools = (
        ToolSpec(name="full", description="Writes.", args=NoArgs, output=None, scope=READ, handler=disk_full),
        ToolSpec(
            name="damaged", description="Reads.", args=NoArgs, output=None, scope=READ, handler=malformed
        ),
    )
    deps = SurfaceDeps(services=cast(Any, None), local_files=LocalFilePolicy(root=None, max_bytes=1))
    server = SurfaceServer("toy", version="1", tools=tools, deps=deps, errors=TextErrors())
    async with Client(server) as client:
        full = await client.call_tool("full", {})
        damaged = await client.call_tool("damaged", {})

    assert full.is_error and damaged.is_error
    assert cast(TextContent, full.content[0]).text.startswith("storage_full: the server's disk is full")
    assert cast(TextContent, damaged.content[0]).text.startswith("damaged_store: ")


def test_a_slug_pointer_that_no_longer_holds_its_brain_is_503_damaged_store(
    container: Container, brain: Brain
) -> None:
    """JSON, but not a brain: every request naming the brain by slug was a 500 internal_error."""
    pk, sk = slug_key(brain.slug, brain.owner_tenant)
    held = container.adapters.records.get(pk, sk)
    assert held is not None
    container.adapters.records.put(
        Item(pk, sk, {"brain_id": brain.id, "brain": {"id": brain.id}}), held.version
    )
    with TestClient(create_app(container), base_url="http://localhost", raise_server_exceptions=False) as c:
        response = c.get(docs_url(brain.slug, "/read"), params={"path": "a.md"})
    body = assert_problem(response, 503, "damaged_store")
    assert f"{sk}: it is not a slug's brain" in body["detail"] and "Traceback" not in response.text


def test_thoughtmcp_tells_a_damaged_store_from_a_memory_not_found() -> None:
    """Both were `success: false` results without isError; the store's failure now says its code."""
    errors = ThoughtErrors()
    for code in ("damaged_store", "storage_full", "unavailable"):
        result = errors.tool_error(code, "a record of the store is damaged", None)
        body = json.loads(cast(TextContent, result.content[0]).text)
        assert result.is_error and (body["success"], body["code"]) == (False, code)
    missing = errors.tool_error("not_found", "Memory not found", None)
    assert not missing.is_error and "code" not in json.loads(cast(TextContent, missing.content[0]).text)
