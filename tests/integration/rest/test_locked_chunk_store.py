"""A write whose chunk index another process holds locked past SQLite's busy timeout (a `cairn
check` rebuilding a big brain's keyword index, stuck) is answered `unavailable`, with Retry-After
on REST and as an MCP tool error, never a 500 (adapters/local/upgrade_wait.py). The busy timeout
is shortened here (30 s in a release)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local import sqlite_threads, upgrade_wait
from cairn.container import Container
from cairn.entrypoints.http import create_app
from tests.integration.cli.test_cli_keyword_index import close, opened

MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.fixture
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Container]]:
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", 0.2)
    monkeypatch.setattr(upgrade_wait, "POLL_S", 0.02)
    data = tmp_path / "data"
    container = opened(data)
    container.brains.create("Notes", slug="notes")
    yield data, container
    close(container)


def held(data: Path) -> sqlite3.Connection:
    """The chunk index's writer lock, held by another connection that shows no progress."""
    holder = sqlite3.connect(data / "chunks.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_a_rest_write_is_answered_unavailable(serving: tuple[Path, Container]) -> None:
    data, container = serving
    holder = held(data)
    try:
        with TestClient(
            create_app(container), base_url="http://localhost", raise_server_exceptions=False
        ) as client:
            answer = client.put(
                "/v1/brains/notes/documents",
                params={"path": "a.md"},
                content=b"# A\n\nheron eats fish\n",
                headers={"content-type": "application/octet-stream"},
            )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "unavailable"
    assert int(answer.headers["retry-after"]) > 0


def test_an_mcp_write_is_answered_unavailable(serving: tuple[Path, Container]) -> None:
    data, container = serving
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_remember", "arguments": {"content": "heron eats fish", "brain": "notes"}},
    }
    holder = held(data)
    try:
        with TestClient(create_app(container), base_url="http://localhost") as client:
            answer = client.post("/mcp", content=json.dumps(call), headers=MCP_HEADERS)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"], result
    assert json.loads(result["content"][0]["text"])["code"] == "unavailable"
