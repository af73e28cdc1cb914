"""A write whose record store another process holds locked past SQLite's busy timeout (an import,
an erasure's scrub, a process stuck mid-transaction) is answered `unavailable`, with Retry-After
on REST and as an MCP tool error, never a 500 (adapters/local/sqlite_records.py). The waits are
shortened here (10 s, then 30 s more, in a release)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local import sqlite_records
from cairn.container import Container
from cairn.domain.errors import Unavailable
from cairn.entrypoints.http import create_app
from tests.integration.cli.test_cli_keyword_index import close, opened

MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.fixture
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Container]]:
    monkeypatch.setattr(sqlite_records, "BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(sqlite_records, "BEGIN_RETRY_S", 0.2)
    data = tmp_path / "data"
    container = opened(data)
    container.brains.create("Notes", slug="notes")
    yield data, container
    close(container)


def held(data: Path) -> sqlite3.Connection:
    """The record store's writer lock, held by another connection."""
    holder = sqlite3.connect(data / "records.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def release(holder: sqlite3.Connection) -> None:
    holder.execute("ROLLBACK")
    holder.close()


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
        release(holder)
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
        release(holder)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"], result
    assert json.loads(result["content"][0]["text"])["code"] == "unavailable"


def test_a_scrub_meeting_the_lock_is_unavailable(serving: tuple[Path, Container]) -> None:
    """An erasure's scrub tries again on a CairnError and then says how to finish it."""
    data, container = serving
    records = container.adapters.records
    assert isinstance(records, sqlite_records.SqliteRecordStore)
    records.put(sqlite_records.Item("a", "b", {"text": "x" * 5000}))
    records.delete("a", "b")  # its overflow pages freed: the scrub must VACUUM
    holder = held(data)
    try:
        with pytest.raises(Unavailable):
            records.scrub()
    finally:
        release(holder)
    records.scrub()
