"""In-memory JobRunner: the SQLite runner's engine over a dict, so semantics are identical.

Rows are copied in and out (as a database would), and claims/updates happen under one lock.
Nothing survives the process, so crash recovery only matters within one runner (a handler that
aborts with a BaseException leaves its job running until the lease expires).
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from cairn.adapters.local.job_engine import JobEngine
from cairn.adapters.local.job_rows import FINISHED, JobRow, held_by
from cairn.domain.models import JobStatus
from cairn.ports.clock import Clock
from cairn.ports.jobs import JobHolds
from tests.fakes.clock import FakeClock


class MemoryJobStore:
    def __init__(self) -> None:
        self.rows: dict[str, JobRow] = {}  # insertion order is age: the oldest is claimed first among equals
        self._lock = threading.Lock()

    def insert(self, row: JobRow) -> JobRow:
        with self._lock:
            for existing in self.rows.values():
                if row.idempotency_key is not None and existing.idempotency_key == row.idempotency_key:
                    return copy.deepcopy(existing)
            self.rows[row.id] = copy.deepcopy(row)
            return copy.deepcopy(row)

    def get(self, job_id: str) -> JobRow | None:
        with self._lock:
            row = self.rows.get(job_id)
            return None if row is None else copy.deepcopy(row)

    def claim(
        self,
        now: datetime,
        lease_until: float,
        *,
        per_principal: int | None = None,
        job_id: str | None = None,
    ) -> JobRow | None:
        deadline = now.timestamp()
        with self._lock:
            held = Counter(row.principal for row in self.rows.values() if self._live(row, deadline))
            claimable = [
                row
                for row in self.rows.values()
                if (row.status is JobStatus.queued or self._expired(row, deadline))
                and (per_principal is None or held[row.principal] < per_principal)
                and (job_id is None or row.id == job_id)
            ]
            if not claimable:
                return None
            row = min(claimable, key=lambda r: held[r.principal])  # the first of the least held: the oldest
            row.status, row.attempts = JobStatus.running, row.attempts + 1
            row.lease_until, row.updated_at = lease_until, now
            return copy.deepcopy(row)

    @staticmethod
    def _live(row: JobRow, deadline: float) -> bool:
        return row.status is JobStatus.running and row.lease_until is not None and row.lease_until >= deadline

    @staticmethod
    def _expired(row: JobRow, deadline: float) -> bool:
        """As SQLite reads `lease_until < ?`: a running row with no lease time has none to run out."""
        return row.status is JobStatus.running and row.lease_until is not None and row.lease_until < deadline

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        with self._lock:
            row = self.rows.get(job_id)
            if row is None or row.status is not JobStatus.running or row.attempts != attempt:
                return False
            self.rows[job_id] = replace(row, **copy.deepcopy(changes), updated_at=now)
            return True

    def release(self, job_id: str, attempt: int, now: datetime, ran_s: float) -> bool:
        with self._lock:
            row = self.rows.get(job_id)
            if row is None or row.status is not JobStatus.running or row.attempts != attempt:
                return False
            row.status, row.lease_until, row.updated_at = JobStatus.queued, None, now
            row.handed_over += 1
            row.handed_over_s += max(0.0, ran_s)
            return True

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None) -> int:
        with self._lock:
            found = [self.rows[i] for i in dict.fromkeys(job_ids) if i in self.rows]
            doomed = [r.id for r in found if r.status in FINISHED and (holds is None or holds(held_by(r)))]
            for job_id in doomed:
                del self.rows[job_id]
            return len(doomed)

    def close(self) -> None:
        pass


class MemoryJobRunner(JobEngine):
    def __init__(
        self,
        clock: Clock | None = None,
        *,
        lease_s: float = 60.0,
        max_attempts: int = 3,
        poll_s: float = 1.0,
        workers: int = 2,
    ) -> None:
        self.store = MemoryJobStore()
        super().__init__(
            self.store,
            clock or FakeClock(),
            lease_s=lease_s,
            max_attempts=max_attempts,
            poll_s=poll_s,
            workers=workers,
        )
