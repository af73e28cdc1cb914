"""Job state for the Step Functions JobRunner, kept in the RecordStore.

Items (one partition per job, so a job and its checkpoints are read together):

    pk = "job#<job id>", sk = "job"               the job: JobRow fields + `execution_arn`
    pk = "job#<job id>", sk = "checkpoint#<key>"  one checkpoint: {"key": ..., "value": ...}

Every change is a read-modify-write conditional on the item's version, retried a few times when
another writer got there first. An attempt's writes are fenced: they apply only while the job is
`running` at that attempt's number, and a checkpoint is written in one transaction with a touch
of the job item, so a superseded attempt cannot add checkpoints either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from cairn.adapters.local.job_rows import FINISHED, JobRow, held_by
from cairn.domain.errors import Conflict
from cairn.domain.models import JobStatus
from cairn.ports.jobs import JobHolds
from cairn.ports.records import Item, Put, RecordStore

JOB_SK = "job"
CHECKPOINT_PREFIX = "checkpoint#"
_MAX_TRIES = 8

Change = Callable[[JobRow], dict[str, Any] | None]
"""Given the job as stored, the JobRow fields to change, or None to leave it alone."""


def job_pk(job_id: str) -> str:
    return f"job#{job_id}"


@dataclass(frozen=True)
class StoredJob:
    row: JobRow
    execution_arn: str
    version: int


class JobRecords:
    def __init__(self, records: RecordStore) -> None:
        self._records = records

    def create(self, row: JobRow, execution_arn: str) -> tuple[StoredJob, bool]:
        """Store a new job; when its id is taken, store nothing. Returns (stored job, created)."""
        try:
            item = self._records.put(Item(job_pk(row.id), JOB_SK, _encode(row, execution_arn)), 0)
        except Conflict:
            existing = self.get(row.id)
            if existing is None:  # deleted in between: vanishingly rare, let the caller retry
                raise
            return existing, False
        return _decode(item), True

    def get(self, job_id: str) -> StoredJob | None:
        item = self._records.get(job_pk(job_id), JOB_SK)
        return None if item is None else _decode(item)

    def update(self, job_id: str, now: datetime, change: Change) -> StoredJob | None:
        """Apply `change` to the stored job; None when the job is missing or `change` declined."""
        for _ in range(_MAX_TRIES):
            stored = self.get(job_id)
            changes = None if stored is None else change(stored.row)
            if stored is None or changes is None:
                return None
            try:
                item = self._records.put(self._changed(stored, changes, now), stored.version)
            except Conflict:
                continue
            return _decode(item)
        raise Conflict(f"job {job_id} kept changing while being updated")

    def checkpoint(self, job_id: str, attempt: int, key: str, value: Any, now: datetime) -> bool:
        """Record checkpoint `key` if the job is running at `attempt`; False when it is not."""
        pk = job_pk(job_id)
        point = Item(pk, f"{CHECKPOINT_PREFIX}{key}", {"key": key, "value": value})
        for _ in range(_MAX_TRIES):
            stored = self.get(job_id)
            if stored is None or not owned_by(stored.row, attempt):
                return False
            try:
                self._records.transact([Put(point), Put(self._changed(stored, {}, now), stored.version)])
            except Conflict:
                continue
            return True
        raise Conflict(f"job {job_id} kept changing while being checkpointed")

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        after: str | None = None
        while True:
            page = self._records.query(job_pk(job_id), CHECKPOINT_PREFIX, after=after)
            for item in page.items:
                found[item.data["key"]] = item.data["value"]
            if page.next_after is None:
                return found
            after = page.next_after

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None) -> int:
        """ForgetsJobs.forget: each job deleted only as it was read (one that changed meanwhile
        is left alone)."""
        forgotten = 0
        for job_id in dict.fromkeys(job_ids):
            stored = self.get(job_id)
            if stored is None or stored.row.status not in FINISHED:
                continue
            checkpoints = self.checkpoints(job_id)
            if holds is not None and not holds(held_by(replace(stored.row, checkpoints=checkpoints))):
                continue
            forgotten += self._delete(stored, checkpoints)
        return forgotten

    def _delete(self, stored: StoredJob, checkpoints: dict[str, Any]) -> bool:
        """The checkpoints first (a finished job never writes one again), so a delete stopped
        half way leaves the job, which the next forget finds through the brain's job log."""
        pk = job_pk(stored.row.id)
        for key in checkpoints:
            self._records.delete(pk, f"{CHECKPOINT_PREFIX}{key}")
        try:
            return self._records.delete(pk, JOB_SK, expected_version=stored.version)
        except Conflict:
            return False

    @staticmethod
    def _changed(stored: StoredJob, changes: dict[str, Any], now: datetime) -> Item:
        row = replace(stored.row, **changes, updated_at=now)
        return Item(job_pk(row.id), JOB_SK, _encode(row, stored.execution_arn))


def owned_by(row: JobRow, attempt: int) -> bool:
    return row.status is JobStatus.running and row.attempts == attempt


def _encode(row: JobRow, execution_arn: str) -> dict[str, Any]:
    return {
        "id": row.id,
        "kind": row.kind,
        "brain_id": row.brain_id,
        "principal": row.principal,
        "status": row.status.value,
        "progress": row.progress,
        "message": row.message,
        "input": row.input,
        "result": row.result,
        "error": row.error,
        "attempts": row.attempts,
        "idempotency_key": row.idempotency_key,
        "execution_arn": execution_arn,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


def _decode(item: Item) -> StoredJob:
    data = item.data
    row = JobRow(
        id=data["id"],
        kind=data["kind"],
        brain_id=data.get("brain_id"),
        principal=data.get("principal"),
        status=JobStatus(data["status"]),
        progress=float(data.get("progress", 0.0)),
        message=data.get("message"),
        input=data.get("input") or {},
        result=data.get("result"),
        error=data.get("error"),
        attempts=int(data.get("attempts", 0)),
        idempotency_key=data.get("idempotency_key"),
        created_at=datetime.fromisoformat(data["created_at"]),
        updated_at=datetime.fromisoformat(data["updated_at"]),
    )
    return StoredJob(row, data["execution_arn"], item.version)
