"""Audit entries the record store refused as busy outlive the process that kept them: its stop
puts them in the data directory's spill (`audit-kept.jsonl`) when the store still refuses them,
and the next process on the data directory writes them (its sweep, or its stop). A spill a power cut left cut
short is read up to its last whole entry, and the audit still answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local import sqlite_records
from cairn.adapters.local.audit_spill import FileAuditSpill
from cairn.auth import access
from cairn.auth.authenticate import OPEN
from cairn.bootstrap import build_container
from cairn.bootstrap.local import AUDIT_SPILL
from cairn.bootstrap.sweep import index_sweeper
from cairn.config import Settings
from cairn.container import Container
from cairn.entrypoints.http import create_app
from cairn.ports.clock import SystemClock
from cairn.services.audit import REDACTED
from tests.integration.rest.test_locked_stores import held, release
from tests.support.shapes import embedded


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sqlite_records, "BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(sqlite_records, "BEGIN_RETRY_S", 0.2)
    return tmp_path / "data"


def opened(data: Path) -> Container:
    """A process's container on the data directory, the spill where `cairn serve` keeps it."""
    spill = FileAuditSpill(data / AUDIT_SPILL)
    adapters = replace(embedded(data), audit_spill=spill, clock=SystemClock())
    return build_container(Settings(data_dir=data, allow_open=True), adapters)


def started(data: Path) -> Container:
    """`opened`, and its first sweep done (which takes the spill)."""
    container = opened(data)
    index_sweeper(container).tick()
    return container


@pytest.fixture
def kept(data: Path) -> Iterator[list[str]]:
    """Two entries a process kept while another held the record store's lock, and stopped with
    the lock still held: the ids of what it kept."""
    first = opened(data)
    brain = first.brains.create("Notes", slug="notes")
    holder = held(data / "records.sqlite3")
    try:
        ids = [
            first.audit.record(OPEN, "rest.put_document", brain_id=brain.id, target="a.md").id,
            first.audit.record(OPEN, "rest.create_key").id,
        ]
        assert first.audit.close() == 2
    finally:
        release(holder)
    yield ids


def _audit(container: Container) -> list[str]:
    """The ids /v1/admin/audit lists, newest first, but those of its own reads."""
    with TestClient(create_app(container), base_url="http://localhost") as client:
        answer = client.get("/v1/admin/audit")
    assert answer.status_code == 200, answer.text
    return [e["id"] for e in answer.json()["items"] if e["action"] != "rest.audit"]


def test_what_a_stopped_process_kept_is_written_by_the_next(data: Path, kept: list[str]) -> None:
    assert (data / AUDIT_SPILL).stat().st_size > 0
    assert _audit(started(data)) == kept[::-1]
    assert (data / AUDIT_SPILL).stat().st_size == 0
    assert _audit(started(data)) == kept[::-1]  # written once


def test_a_spill_cut_short_is_read_up_to_its_last_whole_entry(data: Path, kept: list[str]) -> None:
    spill = data / AUDIT_SPILL
    whole = spill.read_bytes()
    spill.write_bytes(whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 1] + whole[-40:-20])
    assert _audit(started(data)) == kept[:1]


@pytest.mark.parametrize("stop", ["writes", "spills"])
def test_what_a_process_kept_through_another_s_erasure_is_written_redacted(data: Path, stop: str) -> None:
    """Process A keeps an entry naming a note of an agent scope (the store busy); process B erases
    the scope meanwhile, its scan of the store not seeing A's entry. A's stop writes the entry, or
    puts it in the spill for the next start to write: either way it lands redacted."""
    path = "memory/agent/scout/a.md"
    first = opened(data)
    with access.as_system():
        brain = first.brains.create("Notes", slug="notes")
        first.documents.write(brain, path, b"A note of the scout.")
    holder = held(data / "records.sqlite3")
    try:
        kept = first.audit.record(OPEN, "rest.put_document", brain_id=brain.id, target=path)
    finally:
        release(holder)
    eraser = opened(data)
    with access.as_system():
        assert eraser.erasure.erase("agent_scope", "scout").status == "completed"
    if stop == "writes":
        assert first.audit.close() == 0
    else:
        holder = held(data / "records.sqlite3")
        try:
            assert first.audit.close() == 1
        finally:
            release(holder)
        assert path in (data / AUDIT_SPILL).read_text()
        started(data)  # the next process writes what the spill holds
    stored = [e for e in eraser.audit.query(brain_id=brain.id)[0] if e.id == kept.id]
    assert [e.target for e in stored] == [REDACTED]
