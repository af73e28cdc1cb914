"""A write whose store another process holds locked past SQLite's busy timeout is answered
`unavailable`, with Retry-After on REST and as an MCP tool error, never a 500:
- the chunk index (a `cairn check` rebuilding a big brain's keyword index, stuck;
  adapters/local/upgrade_wait.py), whose busy timeout is 30 s in a release;
- the record store (an import, an erasure's scrub, a process stuck mid-transaction;
  adapters/local/writer_lock.py), which waits 10 s, then 30 s more, in a release;
- the job store (a job queued: a consolidation, a big ingest), whose busy timeout is 30 s.
The waits are shortened here. A search, which only reads, answers whichever is locked."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local import sqlite_records, sqlite_threads, upgrade_wait
from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.container import Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Document
from cairn.entrypoints.http import create_app
from cairn.services.documents.indexing import DocumentIndexer, PreparedChunks
from tests.integration.cli.test_cli_keyword_index import close
from tests.support.shapes import embedded

MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Container]]:
    """A data directory with a brain, and its container, the waits shortened."""
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", 0.2)
    monkeypatch.setattr(upgrade_wait, "POLL_S", 0.02)
    monkeypatch.setattr(sqlite_records, "BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(sqlite_records, "BEGIN_RETRY_S", 0.2)
    data = tmp_path / "data"
    adapters = embedded(data)
    jobs = SqliteJobRunner(data / "jobs.sqlite3", adapters.clock)
    container = build_container(Settings(data_dir=data), replace(adapters, jobs=jobs))
    container.brains.create("Notes", slug="notes")
    yield data, container
    close(container)
    jobs.close()


@pytest.fixture(params=["chunks.sqlite3", "records.sqlite3"])
def serving(request: pytest.FixtureRequest, store: tuple[Path, Container]) -> tuple[Path, Container]:
    """The database whose lock a test holds, and the container."""
    data, container = store
    return data / request.param, container


def held(database: Path) -> sqlite3.Connection:
    """The database's writer lock, held by another connection that shows no progress."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def release(holder: sqlite3.Connection) -> None:
    holder.execute("ROLLBACK")
    holder.close()


def appended(line: bytes) -> dict[str, object]:
    """A REST batch appending `line` to one document."""
    content = base64.b64encode(line).decode()
    return {
        "reason": "r",
        "message": "m",
        "author": "a",
        "email": "a@example.com",
        "ops": [{"type": "append", "path": "memory/log.md", "content_base64": content}],
    }


def remembered(line: bytes) -> dict[str, object]:
    """An MCP call of memory_remember storing `line`."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_remember", "arguments": {"content": line.decode(), "brain": "notes"}},
    }


def test_a_rest_write_is_answered_unavailable(serving: tuple[Path, Container]) -> None:
    database, container = serving
    holder = held(database)
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
    database, container = serving
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_remember", "arguments": {"content": "heron eats fish", "brain": "notes"}},
    }
    holder = held(database)
    try:
        with TestClient(create_app(container), base_url="http://localhost") as client:
            answer = client.post("/mcp", content=json.dumps(call), headers=MCP_HEADERS)
    finally:
        release(holder)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"], result
    assert json.loads(result["content"][0]["text"])["code"] == "unavailable"


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_queuing_a_job_is_answered_unavailable(store: tuple[Path, Container], surface: str) -> None:
    data, container = store
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_consolidate", "arguments": {"brain": "notes"}},
    }
    holder = held(data / "jobs.sqlite3")
    try:
        with TestClient(
            create_app(container), base_url="http://localhost", raise_server_exceptions=False
        ) as client:
            if surface == "rest":
                answer = client.post("/v1/brains/notes/consolidate")
            else:
                answer = client.post("/mcp", content=json.dumps(call), headers=MCP_HEADERS)
    finally:
        release(holder)
    if surface == "rest":
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "unavailable"
        assert int(answer.headers["retry-after"]) > 0
    else:
        result = answer.json()["result"]
        assert result["isError"], result
        assert json.loads(result["content"][0]["text"])["code"] == "unavailable"
    assert container.adapters.jobs.run_pending() == 0  # nothing was queued


def test_a_scrub_meeting_the_record_stores_lock_is_unavailable(store: tuple[Path, Container]) -> None:
    """An erasure's scrub tries again on a CairnError and then says how to finish it."""
    data, container = store
    database = data / "records.sqlite3"
    records = container.adapters.records
    assert isinstance(records, sqlite_records.SqliteRecordStore)
    records.put(sqlite_records.Item("a", "b", {"text": "x" * 5000}))
    records.delete("a", "b")  # its overflow pages freed: the scrub must VACUUM
    holder = held(database)
    try:
        with pytest.raises(Unavailable):
            records.scrub()
    finally:
        release(holder)
    records.scrub()


def test_searches_answer_while_the_record_store_is_locked_and_their_read_counts_wait(
    store: tuple[Path, Container],
) -> None:
    """A search counts the documents it hands back in the record store, off its own path: with the
    lock held the searches answer, and the counts their flush could not write are written later."""
    data, container = store
    access = container.search.access
    assert access is not None
    access.flush_at = 1  # each search's count flushes at once, in the background
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "heron", "brain": "notes"}},
    }
    with TestClient(create_app(container), base_url="http://localhost") as client:
        stored = client.put(
            "/v1/brains/notes/documents",
            params={"path": "a.md"},
            content=b"# A\n\nheron eats fish\n",
            headers={"content-type": "application/octet-stream"},
        )
        assert stored.status_code < 300, stored.text
        holder = held(data / "records.sqlite3")
        try:
            rest = client.post("/v1/brains/notes/search", json={"query": "heron"})
            mcp = client.post("/mcp", content=json.dumps(call), headers=MCP_HEADERS)
            with pytest.raises(Unavailable):  # after the background flush, the lock still held
                access.flush()
        finally:
            release(holder)
    assert rest.status_code == 200, rest.text
    assert not mcp.json()["result"]["isError"], mcp.text
    handed = [hit["document_id"] for hit in rest.json()["hits"]]
    handed += [hit["document_id"] for hit in mcp.json()["result"]["structuredContent"]["hits"]]
    assert handed
    access.flush()
    brain = container.brains.get("notes")
    for doc_id in set(handed):
        assert access.get(brain.id, doc_id).count == handed.count(doc_id)


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_a_write_whose_record_store_is_locked_after_its_chunks_are_written_is_acknowledged(
    store: tuple[Path, Container], surface: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process takes the record store's lock between a write's commit and the delete of
    its index intent: the write is stored and searchable, so it is answered as done (answered
    unavailable, 'nothing was changed', an append retried would be appended twice), and its
    intent is left standing for the sweeper."""
    data, container = store
    holders: list[sqlite3.Connection] = []
    real = DocumentIndexer.apply

    def apply_then_lock(indexer: DocumentIndexer, doc: Document, prepared: PreparedChunks) -> bool:
        applied = real(indexer, doc, prepared)
        if not holders:
            holder = sqlite3.connect(data / "records.sqlite3", isolation_level=None, check_same_thread=False)
            holder.execute("BEGIN IMMEDIATE")
            holders.append(holder)
        return applied

    monkeypatch.setattr(DocumentIndexer, "apply", apply_then_lock)
    line = b"heron eats fish\n"
    append, call = appended(line), remembered(line)
    with TestClient(
        create_app(container), base_url="http://localhost", raise_server_exceptions=False
    ) as client:
        try:
            if surface == "rest":
                answer = client.post("/v1/brains/notes/documents/batch-ops", json=append)
                assert answer.status_code == 200, answer.text
                assert answer.json() == {"committed": 1}
            else:
                answer = client.post("/mcp", content=json.dumps(call), headers=MCP_HEADERS)
                assert not answer.json()["result"]["isError"], answer.text
            assert holders, "the lock was taken"
            hits = client.post("/v1/brains/notes/search", json={"query": "heron"}).json()["hits"]
        finally:
            for holder in holders:
                release(holder)
    assert len(hits) == 1, hits
    brain = container.brains.get("notes")
    doc = container.documents.get_by_id(brain, hits[0]["document_id"])
    assert container.documents.content(doc).count(line) == 1
    assert container.documents.settle_pending() == 1  # the intent the lock left, settled


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_a_write_the_chunk_index_refuses_after_its_commit_says_it_was_stored(
    store: tuple[Path, Container], surface: str
) -> None:
    """The chunk index is locked, so a write commits its record and cannot index it: it is not
    acknowledged (not searchable yet), but not answered 'nothing was changed: try again' either,
    which would have an append sent twice. The sweeper indexes it once the lock is gone."""
    data, container = store
    line = b"heron eats fish\n"
    append, call = appended(line), remembered(line)
    holder = held(data / "chunks.sqlite3")
    try:
        with TestClient(
            create_app(container), base_url="http://localhost", raise_server_exceptions=False
        ) as client:
            if surface == "rest":
                answer = client.post("/v1/brains/notes/documents/batch-ops", json=append)
                assert answer.status_code == 503, answer.text
                error = {"code": answer.json()["code"], "message": answer.json()["detail"]}
            else:
                result = client.post("/mcp", content=json.dumps(call), headers=MCP_HEADERS).json()["result"]
                assert result["isError"], result
                error = json.loads(result["content"][0]["text"])
    finally:
        release(holder)
    assert error["code"] == "unavailable"
    assert "was stored" in error["message"] and "nothing was changed" not in error["message"], error
    brain = container.brains.get("notes")
    assert container.search.search(brain, "heron").hits == []
    assert container.documents.settle_pending() == 1
    hits = container.search.search(brain, "heron").hits
    assert len(hits) == 1
    doc = container.documents.get_by_id(brain, hits[0].document_id)
    assert container.documents.content(doc).count(line) == 1
