"""The embedded job claim chooses as the single-statement claim it replaced did: that SQL, kept
here as the oracle, runs on a copy of the same random job table (principals none, empty, unicode
or many; queued, running under a live or lapsed lease, finished; or a crowd of one-job principals
beside a few with many), capped or not, named or not, between the writes that change which job is
a principal's oldest queued one (claims, hand-backs, retries, ends, new jobs, deletions). After
each write, the principals' heads the claim reads are their oldest queued jobs."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.adapters.local.job_rows import JobRow
from cairn.adapters.local.sqlite_jobs import _COLUMNS, SqliteJobStore, _encode
from cairn.domain.models import JobStatus

NOW = datetime(2025, 1, 1, tzinfo=UTC)
LEASE_S = 60.0

# The claim as it was before it read each principal's oldest job: one UPDATE over every claimable row.
_ORACLE = """
SELECT j.id FROM jobs AS j
LEFT JOIN (
    SELECT principal, COUNT(*) AS n FROM jobs
    WHERE status = 'running' AND lease_until >= :now
    GROUP BY principal
) AS held ON held.principal IS j.principal
WHERE (j.status = 'queued' OR (j.status = 'running' AND j.lease_until < :now))
  AND (:cap IS NULL OR COALESCE(held.n, 0) < :cap)
  AND (:id IS NULL OR j.id = :id)
ORDER BY COALESCE(held.n, 0), j.rowid LIMIT 1
"""

_PRINCIPALS = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "alice", "Alice", "alice\x00", "é", "e\u0301", "\U0010ffff", "z" * 300]),
    st.text(max_size=4),
)
_STATES = st.sampled_from(["queued", "live", "lapsed", "lapsed-now", "completed", "failed", "no-lease"])
_MIXED = st.lists(st.tuples(_PRINCIPALS, _STATES), max_size=40)


def _crowd(
    bigs: int, each: int, singles: list[str], bigs_first: bool, live: set[int]
) -> list[tuple[str | None, str]]:
    """`bigs` principals (the first one none) of `each` queued jobs and one queued job each of
    `singles`, the bigs' jobs older or newer; the principals numbered in `live` (bigs first) also
    hold a live lease."""
    names = [None, "big1", "big2"][:bigs] + [f"one-{name}" for name in singles]
    big = [(names[n % bigs], "queued") for n in range(bigs * each)]
    one = [(name, "queued") for name in names[bigs:]]
    held = [(names[n], "live") for n in sorted(live) if n < len(names)]
    return held + (big + one if bigs_first else one + big)


_CROWD = st.builds(
    _crowd,
    bigs=st.integers(min_value=0, max_value=3),
    each=st.integers(min_value=1, max_value=15),
    singles=st.lists(st.text(max_size=3), min_size=5, max_size=40, unique=True),
    bigs_first=st.booleans(),
    live=st.sets(st.integers(min_value=0, max_value=20), max_size=8),
)
_JOBS = st.one_of(_MIXED, _CROWD)
_WRITES = st.lists(
    st.one_of(
        st.tuples(st.just("claim"), st.integers(min_value=0, max_value=3)),
        st.tuples(st.sampled_from(["release", "retry", "finish", "delete"]), st.integers(min_value=0)),
        st.tuples(st.just("insert"), _PRINCIPALS),
    ),
    max_size=6,
)


def _row(principal: str | None, state: str) -> JobRow:
    row = JobRow.new("work", {}, NOW, principal=principal)
    if state in ("live", "lapsed", "lapsed-now", "no-lease"):
        row.status = JobStatus.running
        row.lease_until = {
            "live": NOW.timestamp() + 5,
            "lapsed": NOW.timestamp() - 5,
            "lapsed-now": NOW.timestamp(),  # a lease ending now is still held
            "no-lease": None,
        }[state]
    elif state in ("completed", "failed"):
        row.status = JobStatus(state)
        row.lease_until = NOW.timestamp() - 5
    return row


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    jobs=_JOBS,
    cap=st.one_of(st.none(), st.integers(min_value=0, max_value=3)),
    named=st.one_of(st.none(), st.integers(min_value=0, max_value=45)),
    writes=_WRITES,
)
def test_a_claim_takes_the_job_the_old_claim_took(
    tmp_path_factory: pytest.TempPathFactory,
    jobs: list[tuple[str | None, str]],
    cap: int | None,
    named: int | None,
    writes: list[tuple[str, Any]],
) -> None:
    path = tmp_path_factory.mktemp("claim") / "jobs.sqlite3"
    store = SqliteJobStore(path)
    try:
        rows = [_row(principal, state) for principal, state in jobs]
        with store._db.transaction() as conn:
            conn.executemany(
                f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 18)})", map(_encode, rows)
            )
        ids = [row.id for row in rows]
        job_id = None if named is None else (ids[named] if named < len(ids) else "job_unknown")
        _assert_heads(store)
        for write, arg in [("claim", 1), *writes]:  # each on the table the writes before it left
            if write == "claim":
                for _ in range(arg):
                    _claim_as_the_oracle(store, cap, job_id)
            elif write == "insert":
                ids.append(store.insert(JobRow.new("work", {}, NOW, principal=arg)).id)
            else:
                _write(store, write, arg)
            _assert_heads(store)
    finally:
        store.close()


def _claim_as_the_oracle(store: SqliteJobStore, cap: int | None, job_id: str | None) -> None:
    oracle = sqlite3.connect(":memory:")
    store._db.get().backup(oracle)
    values = {"now": NOW.timestamp(), "cap": cap, "id": job_id}
    expected = oracle.execute(_ORACLE, values).fetchone()
    oracle.close()
    got = store.claim(NOW, NOW.timestamp() + LEASE_S, per_principal=cap, job_id=job_id)
    assert (None if got is None else got.id) == (None if expected is None else expected[0])
    if got is not None:
        assert got.status is JobStatus.running and got.lease_until == NOW.timestamp() + LEASE_S


def _write(store: SqliteJobStore, write: str, nth: int) -> None:
    """A write of the job engine to the `nth` running job, or a deletion of the `nth` queued one."""
    status = "queued" if write == "delete" else "running"
    found = (
        store._db.get().execute("SELECT id FROM jobs WHERE status = ? ORDER BY rowid", (status,)).fetchall()
    )
    if not found:
        return
    row = store.get(found[nth % len(found)][0])
    assert row is not None
    if write == "release":
        store.release(row.id, row.attempts, NOW, 1.0)
    elif write == "delete":  # what no store call does to an unfinished job: the triggers still keep the heads
        with store._db.transaction() as conn:
            conn.execute("DELETE FROM jobs WHERE id = ?", (row.id,))
    else:
        status = JobStatus.queued if write == "retry" else JobStatus.completed
        store.update(row.id, row.attempts, NOW, {"status": status, "lease_until": None})


def _assert_heads(store: SqliteJobStore) -> None:
    conn = store._db.get()
    heads = conn.execute("SELECT rowid FROM jobs WHERE head = 1 ORDER BY rowid").fetchall()
    oldest = conn.execute(
        "SELECT min(rowid) FROM jobs WHERE status = 'queued' GROUP BY principal ORDER BY 1"
    ).fetchall()
    assert heads == oldest


def test_a_jobs_file_from_before_the_heads_claims_as_the_old_claim(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite3"
    with sqlite3.connect(path) as conn:  # the table as the release before the heads made it
        columns = _COLUMNS.split(", ")
        conn.execute(f"CREATE TABLE jobs ({', '.join(columns)})")
        jobs = [("alice", "live"), ("alice", "queued"), (None, "queued"), ("bob", "queued")]
        rows = [_row(principal, state) for principal, state in [*jobs, *jobs]]
        conn.executemany(f"INSERT INTO jobs VALUES ({', '.join('?' * 18)})", map(_encode, rows))
    conn.close()
    store = SqliteJobStore(path)
    try:
        _assert_heads(store)
        for _ in range(4):
            _claim_as_the_oracle(store, None, None)
            _assert_heads(store)
    finally:
        store.close()
