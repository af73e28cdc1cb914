"""The embedded job claim chooses as the single-statement claim it replaced did: that SQL, kept
here as the oracle, runs on a copy of the same random job table (principals none, empty, unicode
or many; queued, running under a live or lapsed lease, finished), capped or not, named or not."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

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
_JOBS = st.lists(st.tuples(_PRINCIPALS, _STATES), max_size=40)


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
    claims=st.integers(min_value=1, max_value=4),
)
def test_a_claim_takes_the_job_the_old_claim_took(
    tmp_path_factory: pytest.TempPathFactory,
    jobs: list[tuple[str | None, str]],
    cap: int | None,
    named: int | None,
    claims: int,
) -> None:
    path = tmp_path_factory.mktemp("claim") / "jobs.sqlite3"
    store = SqliteJobStore(path)
    try:
        rows = [_row(principal, state) for principal, state in jobs]
        with store._db.transaction() as conn:
            conn.executemany(
                f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 18)})", map(_encode, rows)
            )
        job_id = None if named is None else (rows[named].id if named < len(rows) else "job_unknown")
        for _ in range(claims):  # each claim on the table the claims before it left
            oracle = sqlite3.connect(":memory:")
            store._db.get().backup(oracle)
            values = {"now": NOW.timestamp(), "cap": cap, "id": job_id}
            expected = oracle.execute(_ORACLE, values).fetchone()
            oracle.close()
            got = store.claim(NOW, NOW.timestamp() + LEASE_S, per_principal=cap, job_id=job_id)
            assert (None if got is None else got.id) == (None if expected is None else expected[0])
            if got is not None:
                assert got.status is JobStatus.running and got.lease_until == NOW.timestamp() + LEASE_S
    finally:
        store.close()
