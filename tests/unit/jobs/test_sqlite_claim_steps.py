"""A claim on the embedded job store costs the same beside a backlog of 200 queued jobs (and as
many finished ones) as beside 2,000, whether a few principals wait with many jobs each, or 200
(2,000) principals with one each, or both: it reads the running rows, the waiting principals'
oldest jobs up to the first of a principal running nothing and, for a named job, that row, not
every queued or finished row nor every waiting principal. The work is counted as SQLite
virtual-machine steps."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cairn.adapters.local.job_rows import JobRow
from cairn.adapters.local.sqlite_jobs import _COLUMNS, SqliteJobStore, _encode
from cairn.domain.models import JobStatus
from tests.support.sqlite_steps import steps

NOW = datetime(2025, 1, 1, tzinfo=UTC)
LEASE_S = 60.0
PRINCIPALS = ("alice", "bob", "carol", None)


def _store(path: Path, backlog: int) -> tuple[SqliteJobStore, str]:
    """`backlog` finished jobs, then `backlog` queued ones over four principals (one of them
    none), alice's first one running; returns the store and the id of the newest queued job."""
    store = SqliteJobStore(path / "jobs.sqlite3")
    rows = [
        JobRow.new("work", {"n": n % backlog}, NOW, principal=PRINCIPALS[n % 4]) for n in range(2 * backlog)
    ]
    for row in rows[:backlog]:
        row.status = JobStatus.completed if row.input["n"] % 2 else JobStatus.failed
    with store._db.transaction() as conn:  # one commit: the rows as insert() writes them
        conn.executemany(f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 18)})", map(_encode, rows))
    assert _claim(store) is not None
    return store, rows[-1].id


def _claim(store: SqliteJobStore, cap: int | None = None, job_id: str | None = None) -> JobRow | None:
    return store.claim(NOW, NOW.timestamp() + LEASE_S, per_principal=cap, job_id=job_id)


def _steps(store: SqliteJobStore, work: Callable[[SqliteJobStore], object]) -> int:
    """The SQLite VM steps (in tens) `work` takes on this thread's connection."""
    return steps(store._db.get(), lambda: work(store))[0]


@pytest.mark.parametrize("cap", [None, 1], ids=["uncapped", "capped"])
def test_a_claim_does_not_read_the_backlog(tmp_path: Path, cap: int | None) -> None:
    small, _ = _store(tmp_path / "small", 200)
    big, _ = _store(tmp_path / "big", 2_000)
    try:
        claimed: list[JobRow | None] = []
        few, many = (_steps(s, lambda s: claimed.append(_claim(s, cap))) for s in (small, big))
        assert many <= few * 1.5 + 20, (few, many)
        for row in claimed:  # alice holds one: bob's oldest, the second job queued
            assert row is not None and row.principal == "bob" and row.input == {"n": 1}
    finally:
        small.close()
        big.close()


def test_a_named_claim_reads_that_job(tmp_path: Path) -> None:
    (small, small_id), (big, big_id) = _store(tmp_path / "small", 200), _store(tmp_path / "big", 2_000)
    try:
        few = _steps(small, lambda s: _claim(s, job_id=small_id))
        many = _steps(big, lambda s: _claim(s, job_id=big_id))
        assert many <= few * 1.5 + 20, (few, many)
        for store, job_id in ((small, small_id), (big, big_id)):
            row = store.get(job_id)
            assert row is not None and row.status is JobStatus.running and row.attempts == 1
    finally:
        small.close()
        big.close()


def _crowd(path: Path, backlog: int, bigs: int) -> SqliteJobStore:
    """`backlog` finished jobs; then, queued, `backlog` jobs of `bigs` principals and one job each
    of `backlog` principals; a claim for each big principal (their oldest jobs are the oldest)."""
    store = SqliteJobStore(path / "jobs.sqlite3")
    finished = [JobRow.new("work", {}, NOW, principal=f"one{n}") for n in range(backlog)]
    for row in finished:
        row.status = JobStatus.completed
    big = [JobRow.new("work", {}, NOW, principal=f"big{n % bigs}") for n in range(backlog if bigs else 0)]
    one = [JobRow.new("work", {"n": n}, NOW, principal=f"one{n}") for n in range(backlog)]
    with store._db.transaction() as conn:
        rows = map(_encode, [*finished, *big, *one])
        conn.executemany(f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 18)})", rows)
    for n in range(bigs):
        claimed = _claim(store)
        assert claimed is not None and claimed.principal == f"big{n}"
    return store


@pytest.mark.parametrize("bigs", [0, 3], ids=["one-job-a-principal", "and-three-with-many"])
def test_a_claim_does_not_read_every_waiting_principal(tmp_path: Path, bigs: int) -> None:
    small, big = _crowd(tmp_path / "small", 200, bigs), _crowd(tmp_path / "big", 2_000, bigs)
    try:
        claimed: list[JobRow | None] = []
        few, many = (_steps(s, lambda s: claimed.append(_claim(s))) for s in (small, big))
        assert many <= few * 1.5 + 20, (few, many)
        for row in claimed:  # the big principals hold one each: the oldest of those holding none
            assert row is not None and row.principal == "one0" and row.input == {"n": 0}
    finally:
        small.close()
        big.close()
