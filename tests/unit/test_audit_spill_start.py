"""What a start and a stop do with the audit spill when things go wrong: a process killed before
it wrote what it read loses nothing; a spill that cannot be used (a directory, a symlink) neither
stops the start nor keeps a stop from writing its entries to the store."""

from __future__ import annotations

import errno
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local import audit_spill
from cairn.adapters.local.audit_spill import FileAuditSpill
from cairn.auth.principal import WRITE, Principal, Via
from cairn.domain.errors import Unavailable
from cairn.services import audit as audit_module
from cairn.services.audit import AuditLog
from tests.fakes.audit_spill import MemoryAuditSpill
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore
from tests.fakes.store_secret import SECRET

ALICE = Principal("acme", "alice", frozenset({WRITE}), Via.jwt)


class Killed(BaseException):
    """The process ends here (SIGKILL): nothing after it runs."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=datetime(2026, 3, 10, 12, 0, tzinfo=UTC))


def _spilled(
    records: MemoryRecordStore, clock: FakeClock, spill: Any, monkeypatch: pytest.MonkeyPatch
) -> str:
    """One entry a busy store refused, left in the spill by a stop."""
    log = AuditLog(records, clock, spill, secret=SECRET)
    with monkeypatch.context() as busy:
        busy.setattr(records, "transact", _refuse)
        entry = log.record(ALICE, "doc.write", brain_id="brn_1", target="memory/global/a.md")
        assert log.close() >= 1  # with a batch the spill held before, which the stop took too
    return entry.id


def _refuse(ops: Any) -> None:
    raise Unavailable("the record store is busy (its writer lock is held)")


@pytest.mark.parametrize("spill_kind", ["memory", "file"])
def test_a_start_killed_before_it_wrote_the_spill_loses_nothing(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spill_kind: str
) -> None:
    spill = MemoryAuditSpill() if spill_kind == "memory" else FileAuditSpill(tmp_path / "audit-kept.jsonl")
    records = MemoryRecordStore()
    kept = _spilled(records, clock, spill, monkeypatch)

    def killed(ops: Any) -> None:
        raise Killed

    with monkeypatch.context() as dying, pytest.raises(Killed):
        dying.setattr(records, "transact", killed)
        AuditLog(
            records, clock, spill, secret=SECRET
        ).take_spilled()  # read the spill, killed before its write went in

    restarted = AuditLog(records, clock, spill, secret=SECRET)
    restarted.take_spilled()
    assert [e.id for e in restarted.query(brain_id="brn_1")[0]] == [kept]
    assert spill.read(10) == []  # written: it leaves the spill


def test_a_spill_larger_than_a_process_keeps_is_written_whole_at_the_start(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_module, "MAX_KEPT", 3)
    records, spill = MemoryRecordStore(), MemoryAuditSpill()
    ids = [_spilled(records, clock, spill, monkeypatch) for _ in range(7)]
    restarted = AuditLog(records, clock, spill, secret=SECRET)
    assert restarted.take_spilled() == 0
    assert sorted(e.id for e in restarted.query(brain_id="brn_1", limit=100)[0]) == sorted(ids)
    assert spill.entries == []


@pytest.mark.parametrize("shape", ["directory", "symlink"])
def test_a_spill_that_cannot_be_used_neither_stops_the_start_nor_loses_a_stop_s_entries(
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    shape: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "audit-kept.jsonl"
    if shape == "directory":
        path.mkdir()
    else:
        (tmp_path / "elsewhere").write_text("not ours\n")
        path.symlink_to(tmp_path / "elsewhere")
    records = MemoryRecordStore()
    caplog.set_level(logging.WARNING)
    log = AuditLog(records, clock, FileAuditSpill(path), secret=SECRET)
    assert log.take_spilled() == 0  # the sweep goes on
    assert "cannot be taken" in caplog.text
    with monkeypatch.context() as busy:
        busy.setattr(records, "transact", _refuse)
        entry = log.record(ALICE, "doc.write", brain_id="brn_1")
    assert log.close() == 0  # the spill refused it, the store took it
    assert [e.id for e in log.query(brain_id="brn_1")[0]] == [entry.id]
    if shape == "symlink":
        assert (tmp_path / "elsewhere").read_text() == "not ours\n"


def test_an_entry_naming_a_tenant_and_brain_never_seen_is_written_under_them(
    clock: FakeClock, tmp_path: Path
) -> None:
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    stranger = {
        "id": "aud_01jx0000000000000000000000",
        "at": "2026-03-10T11:00:00Z",
        "tenant": "nobody-here",
        "subject": "ghost",
        "via": "jwt",
        "action": "doc.write",
        "brain_id": "brn_never",
    }
    spill.append([stranger, {"id": "aud_bad", "at": "not a time"}])
    log = AuditLog(MemoryRecordStore(), clock, spill, secret=SECRET)
    log.take_spilled()
    assert [e.id for e in log.query(tenant="nobody-here")[0]] == [stranger["id"]]
    assert [e.id for e in log.query(brain_id="brn_never")[0]] == [stranger["id"]]
    assert spill.read(10) == []  # the unreadable one is dropped with a warning, not kept forever


def test_an_erasure_meeting_a_spill_it_cannot_read_is_unavailable_not_an_internal_error(
    clock: FakeClock, tmp_path: Path
) -> None:
    """Entries may wait in a spill the erasure cannot read: it must not say they were redacted,
    and it answers what a retry (once the file is fixed) ends, never a bare OSError (a 500)."""
    path = tmp_path / "audit-kept.jsonl"
    path.mkdir()
    log = AuditLog(MemoryRecordStore(), clock, FileAuditSpill(path), secret=SECRET)
    with pytest.raises(Unavailable, match=r"audit-kept\.jsonl"):
        log.redact(tenants=["acme"], brain_ids=["brn_1"], targets=["memory/global/a.md"])


def _failing_after(first: int) -> Any:
    """The spill's reading of lines, failing with an I/O error after `first` entries."""
    whole = audit_spill._entries

    def entries(file: Any) -> Any:
        for n, entry in enumerate(whole(file)):
            if n == first:
                raise OSError(errno.EIO, "Input/output error")
            yield entry

    return entries


def test_an_io_error_reading_the_spill_neither_stops_the_start_nor_loses_an_entry(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    records = MemoryRecordStore()
    stopped = AuditLog(records, clock, spill, secret=SECRET)
    with monkeypatch.context() as busy:
        busy.setattr(records, "transact", _refuse)
        kept = [stopped.record(ALICE, "doc.write", brain_id="brn_1").id for _ in range(2)]
        assert stopped.close() == 2
    before = spill.path.read_bytes()
    caplog.set_level(logging.WARNING)
    with monkeypatch.context() as failing:
        failing.setattr(audit_spill, "_entries", _failing_after(1))
        log = AuditLog(records, clock, spill, secret=SECRET)
        assert log.take_spilled() == 0  # the sweep goes on
        assert "cannot be taken" in caplog.text and "Input/output error" in caplog.text
        assert spill.path.read_bytes() == before
        with pytest.raises(Unavailable, match=r"audit-kept\.jsonl"):  # an erasure's rewrite: retried
            log.redact(tenants=["acme"], brain_ids=["brn_1"], targets=["memory/global/a.md"])
        assert spill.path.read_bytes() == before
        assert not spill.path.with_name("audit-kept.jsonl.new").exists()
    restarted = AuditLog(records, clock, spill, secret=SECRET)
    restarted.take_spilled()  # the next sweep takes it all
    assert sorted(e.id for e in restarted.query(brain_id="brn_1")[0]) == sorted(kept)
    assert spill.read(10) == []


def test_a_disk_failing_as_a_stop_spills_leaves_the_entries_to_the_store(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    records = MemoryRecordStore()
    log = AuditLog(records, clock, FileAuditSpill(tmp_path / "audit-kept.jsonl"), secret=SECRET)
    with monkeypatch.context() as busy:
        busy.setattr(records, "transact", _refuse)
        entry = log.record(ALICE, "doc.write", brain_id="brn_1")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as failing:
        failing.setattr(audit_spill.os, "fsync", full)
        assert log.close() == 0  # the spill refused it, the store took it
    assert [e.id for e in log.query(brain_id="brn_1")[0]] == [entry.id]


def test_a_start_on_a_busy_store_leaves_the_spill_to_its_sweep(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Making the log (a process's start) writes nothing: on a busy store a write would hold the
    start up for the store's whole wait for its writer lock. The sweep takes the spill, and keeps
    it while the store refuses it."""
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    records = MemoryRecordStore()
    kept = _spilled(records, clock, spill, monkeypatch)
    tried: list[Any] = []

    def refused(ops: Any) -> None:
        tried.append(ops)
        _refuse(ops)

    with monkeypatch.context() as busy:
        busy.setattr(records, "transact", refused)
        log = AuditLog(records, clock, spill, secret=SECRET)
        assert tried == []
        assert log.take_spilled() == 1 and tried
    assert [e["id"] for e in spill.read(10)] == [kept]
    assert log.take_spilled() == 0
    assert [e.id for e in log.query(brain_id="brn_1")[0]] == [kept]
    assert spill.read(10) == []
