"""The embedded JobRunner: a durable queue in one SQLite file, worked in-process.

Jobs survive restarts: a queued job waits in the file; a job whose process died mid-run stays
`running` until its lease expires, then the next claim (by any runner on the file) takes it
again; one whose process stopped cleanly was put back in the queue (`release`) and is taken at
once. Claims and fenced updates are single `BEGIN IMMEDIATE` transactions in WAL mode, so
several threads or processes may work the same file. Semantics live in JobEngine.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cairn.adapters.local.job_engine import CLOSE_WAIT_S, HANDED_OVER_AT_MOST_S, STOP_GRACE_S, JobEngine
from cairn.adapters.local.job_rows import FINISHED, JobRow, held_by
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.domain.models import JobStatus
from cairn.ports.clock import Clock
from cairn.ports.jobs import JobHolds

log = logging.getLogger("cairn.jobs")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    brain_id TEXT,
    principal TEXT,
    status TEXT NOT NULL,
    progress REAL NOT NULL DEFAULT 0,
    message TEXT,
    input TEXT NOT NULL,
    result TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT UNIQUE,
    checkpoints TEXT NOT NULL DEFAULT '{}',
    lease_until REAL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    handed_over INTEGER NOT NULL DEFAULT 0,
    handed_over_s REAL NOT NULL DEFAULT 0,
    head INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, lease_until);
CREATE INDEX IF NOT EXISTS jobs_queued ON jobs (principal) WHERE status = 'queued';
"""

# A waiting principal's head is its oldest queued job (`head` = 1; the rows without a principal are
# one principal), so a claim reads the heads oldest first (jobs_heads) instead of one seek a waiting
# principal. Triggers keep them, whatever process or release writes the file (a job's principal
# never changes), each with a seek or two in jobs_queued: a job that joins the queue (new, handed
# back, retried) becomes the head when it is its principal's oldest, taking over from the next one
# (the former head); a head that leaves (taken, ended, deleted) passes it to the next oldest.
_OLDEST = """(SELECT rowid FROM jobs INDEXED BY jobs_queued
WHERE status = 'queued' AND principal IS {row}.principal ORDER BY rowid LIMIT {n})"""
_JOINS = f"""
    UPDATE jobs SET head = (rowid = NEW.rowid)
    WHERE rowid IN {_OLDEST.format(row="NEW", n=2)} AND NEW.rowid = {_OLDEST.format(row="NEW", n=1)};
"""
_NEXT_HEAD = f"UPDATE jobs SET head = 1 WHERE rowid = {_OLDEST.format(row='OLD', n=1)} AND head = 0;"
_HEADS_SCHEMA = (
    "CREATE INDEX IF NOT EXISTS jobs_heads ON jobs (head) WHERE head = 1",
    f"""CREATE TRIGGER IF NOT EXISTS jobs_head_queued AFTER INSERT ON jobs WHEN NEW.status = 'queued'
    BEGIN {_JOINS} END""",
    f"""CREATE TRIGGER IF NOT EXISTS jobs_head_requeued AFTER UPDATE OF status ON jobs
    WHEN NEW.status = 'queued' AND OLD.status IS NOT 'queued' BEGIN {_JOINS} END""",
    f"""CREATE TRIGGER IF NOT EXISTS jobs_head_taken AFTER UPDATE OF status ON jobs
    WHEN OLD.status = 'queued' AND NEW.status IS NOT 'queued' BEGIN
    UPDATE jobs SET head = 0 WHERE rowid = NEW.rowid AND head = 1; {_NEXT_HEAD} END""",
    f"""CREATE TRIGGER IF NOT EXISTS jobs_head_deleted AFTER DELETE ON jobs WHEN OLD.head = 1
    BEGIN {_NEXT_HEAD} END""",
)
_FIRST_HEADS = """
UPDATE jobs SET head = 1
WHERE rowid IN (SELECT min(rowid) FROM jobs WHERE status = 'queued' GROUP BY principal)
"""

_COLUMNS = (
    "id, kind, brain_id, principal, status, progress, message, input, result, error, attempts, "
    "idempotency_key, checkpoints, lease_until, created_at, updated_at, handed_over, "
    "handed_over_s"
)
_JSON_COLUMNS = {"input", "result", "checkpoints"}
_FINISHED = ", ".join(f"'{status.value}'" for status in FINISHED)  # in SQL
_UPDATABLE = {"status", "progress", "message", "result", "error", "checkpoints", "lease_until"}

# A claim (JobStore.claim) takes, of the claimable jobs (queued, or running under a lease that has
# run out: its worker died), one of the principal holding the fewest live leases, the oldest
# (rowid) among equals. Only each principal's oldest claimable job can be that one: the claim reads
# the running rows (few, through jobs_by_status) and the heads oldest first, up to the first of a
# principal holding no live lease (none after it can go first), so at most one head more than the
# principals holding leases, never the whole queue, the finished rows, nor every waiting principal.
# NULL principals are one group.
_HELD = """
SELECT principal, COUNT(*) FROM jobs WHERE status = 'running' AND lease_until >= ? GROUP BY principal
"""
_EXPIRED = "SELECT rowid, principal FROM jobs WHERE status = 'running' AND lease_until < ?"
_NAMED = """
SELECT rowid, principal FROM jobs
WHERE id = ? AND (status = 'queued' OR (status = 'running' AND lease_until < ?))
"""
_HEADS = "SELECT rowid, principal FROM jobs INDEXED BY jobs_heads WHERE head = 1 ORDER BY rowid"
_TAKE = f"""
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = ?, updated_at = ?
WHERE rowid = ? RETURNING {_COLUMNS}
"""

_RELEASE = """
UPDATE jobs SET status = 'queued', lease_until = NULL, handed_over = handed_over + 1,
    handed_over_s = handed_over_s + ?, updated_at = ?
WHERE id = ? AND status = 'running' AND attempts = ?
"""


class SqliteJobStore:
    def __init__(self, path: Path) -> None:
        self._db = ThreadConnections(Path(path), store="the job store")
        self._db.get().executescript(_SCHEMA)
        with self._db.transaction() as conn:  # a file from before hand-overs were counted, or timed
            columns = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
            for name, kind in (("handed_over", "INTEGER"), ("handed_over_s", "REAL")):
                if name not in columns:
                    conn.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind} NOT NULL DEFAULT 0")
            if "head" not in columns:  # a file from before the heads were kept
                conn.execute("ALTER TABLE jobs ADD COLUMN head INTEGER NOT NULL DEFAULT 0")
                conn.execute(_FIRST_HEADS)
            for statement in _HEADS_SCHEMA:
                conn.execute(statement)

    def insert(self, row: JobRow) -> JobRow:
        values = _encode(row)
        with self._db.transaction() as conn:
            cur = conn.execute(
                f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * len(values))}) "
                "ON CONFLICT (idempotency_key) DO NOTHING",
                values,
            )
            if cur.rowcount == 1:
                return row
            found = conn.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE idempotency_key = ?", (row.idempotency_key,)
            ).fetchone()
        return _decode(found)

    def get(self, job_id: str) -> JobRow | None:
        found = self._db.get().execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if found is None else _decode(found)

    def claim(
        self,
        now: datetime,
        lease_until: float,
        *,
        per_principal: int | None = None,
        job_id: str | None = None,
    ) -> JobRow | None:
        deadline = now.timestamp()
        with self._db.transaction() as conn:
            held: dict[str | None, int] = dict(conn.execute(_HELD, (deadline,)).fetchall())
            heads = (
                conn.execute(_NAMED, (job_id, deadline)).fetchall()
                if job_id is not None
                else [*conn.execute(_EXPIRED, (deadline,)), *_heads(conn, held)]
            )
            open_ = [
                (held.get(principal, 0), rowid)
                for rowid, principal in heads
                if per_principal is None or held.get(principal, 0) < per_principal
            ]
            if not open_:
                return None
            found = conn.execute(_TAKE, (lease_until, now.isoformat(), min(open_)[1])).fetchone()
        return _decode(found)

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        names = sorted(changes)
        values = [_encode_value(name, changes[name]) for name in names]
        assignments = ", ".join(f"{name} = ?" for name in [*names, "updated_at"])
        with self._db.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET {assignments} WHERE id = ? AND status = 'running' AND attempts = ?",
                (*values, now.isoformat(), job_id, attempt),
            )
        return cur.rowcount == 1

    def release(self, job_id: str, attempt: int, now: datetime, ran_s: float) -> bool:
        with self._db.transaction() as conn:
            cur = conn.execute(_RELEASE, (max(0.0, ran_s), now.isoformat(), job_id, attempt))
        return cur.rowcount == 1

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None) -> int:
        """ForgetsJobs.forget: the rows are deleted with secure_delete ON (their cells and overflow
        pages zeroed), then the file is rewritten (VACUUM: each progress report rewrote a row, so
        older copies of its text lie in freed space) and its log emptied."""
        finished = (self.get(job_id) for job_id in dict.fromkeys(job_ids))
        doomed = [
            row.id
            for row in finished
            if row is not None and row.status in FINISHED and (holds is None or holds(held_by(row)))
        ]
        if not doomed:
            return 0
        with self._db.transaction(zero_freed=True) as conn:
            for job_id in doomed:
                conn.execute(f"DELETE FROM jobs WHERE id = ? AND status IN ({_FINISHED})", (job_id,))
        conn = self._db.get()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            log.warning("the jobs database is busy: its log keeps erased text until it is emptied")
        return len(doomed)

    def close(self) -> None:
        self._db.close()


class SqliteJobRunner(JobEngine):
    """JobRunner on `path`; register handlers, then `start_worker()` (serve) or `run_pending()`."""

    def __init__(
        self,
        path: Path,
        clock: Clock,
        *,
        lease_s: float = 60.0,
        max_attempts: int = 3,
        poll_s: float = 1.0,
        workers: int = 2,
        stop_grace_s: float = STOP_GRACE_S,
        max_handed_over_s: float = HANDED_OVER_AT_MOST_S,
        close_wait_s: float = CLOSE_WAIT_S,
    ) -> None:
        super().__init__(
            SqliteJobStore(path),
            clock,
            lease_s=lease_s,
            max_attempts=max_attempts,
            poll_s=poll_s,
            workers=workers,
            stop_grace_s=stop_grace_s,
            max_handed_over_s=max_handed_over_s,
            close_wait_s=close_wait_s,
        )


def _heads(conn: sqlite3.Connection, held: dict[str | None, int]) -> list[tuple[int, str | None]]:
    """The heads (rowid, principal), oldest first, up to the first of a principal not in `held`."""
    found: list[tuple[int, str | None]] = []
    cursor = conn.execute(_HEADS)
    try:
        for rowid, principal in cursor:
            found.append((rowid, principal))
            if principal not in held:
                break
    finally:
        cursor.close()
    return found


def _encode_value(name: str, value: Any) -> Any:
    if name in _JSON_COLUMNS:
        return None if value is None else json.dumps(value, ensure_ascii=False, allow_nan=False)
    if isinstance(value, JobStatus):
        return value.value
    return value


def _encode(row: JobRow) -> tuple[Any, ...]:
    return (
        row.id,
        row.kind,
        row.brain_id,
        row.principal,
        row.status.value,
        row.progress,
        row.message,
        _encode_value("input", row.input),
        _encode_value("result", row.result),
        row.error,
        row.attempts,
        row.idempotency_key,
        _encode_value("checkpoints", row.checkpoints),
        row.lease_until,
        row.created_at.isoformat(),
        row.updated_at.isoformat(),
        row.handed_over,
        row.handed_over_s,
    )


def _decode(found: Sequence[Any] | sqlite3.Row) -> JobRow:
    (id_, kind, brain_id, principal, status, progress, message, input_, result, error, attempts,
     key, checkpoints, lease_until, created_at, updated_at, handed_over, handed_over_s) = found  # fmt: skip
    return JobRow(
        id=id_,
        kind=kind,
        brain_id=brain_id,
        principal=principal,
        status=JobStatus(status),
        progress=float(progress),
        message=message,
        input=json.loads(input_),
        result=None if result is None else json.loads(result),
        error=error,
        attempts=int(attempts),
        idempotency_key=key,
        checkpoints=json.loads(checkpoints),
        lease_until=lease_until,
        created_at=datetime.fromisoformat(created_at),
        updated_at=datetime.fromisoformat(updated_at),
        handed_over=int(handed_over),
        handed_over_s=float(handed_over_s),
    )
