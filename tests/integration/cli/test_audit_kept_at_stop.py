"""The real entry points call the audit's close at their stop: `cairn serve` at SIGTERM puts an
entry the busy record store refused in the data directory's spill, and the next process writes it
at its stop; `cairn mcp` (stdio), started on a busy store with a spill, writes the spill at the
end of its input once the store takes it. The store is held busy from outside: another connection
holds SQLite's writer lock, and the processes wait for it a fraction of a second
(cairn_short_wait.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from cairn.adapters.local.audit_spill import FileAuditSpill
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import build_container
from cairn.bootstrap.closing import close_stores
from cairn.bootstrap.local import AUDIT_SPILL
from cairn.config import Settings
from cairn.domain.ids import new_id
from cairn.ports.clock import SystemClock
from cairn.services.audit import AuditLog
from tests.fakes.store_secret import SECRET
from tests.integration.rest.test_locked_stores import held, release
from tests.support.processes import environment, start

SHORT_WAIT = (sys.executable, "-m", "tests.integration.cli.cairn_short_wait")
RECORDS = "records.sqlite3"


def _audited(base: str) -> list[dict[str, str]]:
    answer = httpx.get(f"{base}/v1/admin/audit", timeout=60)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def _settled(data: Path, base: str) -> set[str]:
    """The ids of the audit entries stored once every audited read made here has landed (a read's
    entry is written after its answer: one still on its way when the store is held is kept too)."""
    reads, tenant = 0, None
    while tenant is None:
        reads += 1
        tenant = next((e["tenant"] for e in _audited(base)), None)
    log = AuditLog(SqliteRecordStore(data / RECORDS), SystemClock(), secret=SECRET)
    for _ in range(200):
        stored = log.query(tenant=tenant, limit=1000)[0]
        if sum(e.action == "rest.audit" for e in stored) >= reads:
            return {e.id for e in stored}
        time.sleep(0.05)
    raise AssertionError("the server's audited reads never landed")


def test_serve_at_sigterm_spills_what_the_busy_store_refused_and_the_next_start_writes_it(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    server = start(data, command=SHORT_WAIT)
    try:
        before = _settled(data, server.base)
        holder = held(data / RECORDS)
        try:
            _audited(server.base)  # answered; its entry is refused as busy and kept
            server.process.terminate()
            assert server.process.wait(timeout=60) == 0
        finally:
            release(holder)
    finally:
        server.stop()
    spilled = FileAuditSpill(data / AUDIT_SPILL).read(10)
    assert [e["action"] for e in spilled] == ["rest.audit"]
    assert spilled[0]["id"] not in before

    server = start(data)  # its start leaves the spill to its sweep, or its stop
    server.stop()
    assert FileAuditSpill(data / AUDIT_SPILL).read(10) == []
    stored = AuditLog(SqliteRecordStore(data / RECORDS), SystemClock(), secret=SECRET).query(
        tenant=spilled[0]["tenant"]
    )[0]
    assert spilled[0]["id"] in {e.id for e in stored}


def test_stdio_at_the_end_of_its_input_writes_what_it_kept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    close_stores(build_container(Settings(data_dir=data)))  # the store made: set-up, not under test
    entry = {
        "id": new_id("aud"),
        "at": datetime.now(UTC).isoformat(),
        "tenant": "acme",
        "subject": "alice",
        "via": "jwt",
        "action": "rest.put_document",
        "brain_id": "brn_1",
        "target": "notes/a.md",
    }
    FileAuditSpill(data / AUDIT_SPILL).append([entry])
    holder = held(data / RECORDS)
    session = subprocess.Popen(
        [*SHORT_WAIT, "mcp", "--data-dir", str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert session.stdin is not None and session.stdout is not None
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        session.stdin.write(json.dumps(request).encode() + b"\n")
        session.stdin.flush()
        assert json.loads(session.stdout.readline())["id"] == 1  # started, the spill left as it is
    finally:
        release(holder)
    session.stdin.close()
    assert session.wait(timeout=60) == 0, session.stderr.read().decode() if session.stderr else ""
    assert FileAuditSpill(data / AUDIT_SPILL).read(10) == []
    stored = AuditLog(SqliteRecordStore(data / RECORDS), SystemClock(), secret=SECRET).query(
        brain_id="brn_1"
    )[0]
    assert [(e.id, e.target) for e in stored] == [(entry["id"], "notes/a.md")]
