"""A job as the embedded runners store it (JobRow), the JobStore they work over, and the checks of
what goes into a row (names, plain JSON). The Step Functions runner keeps the same rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from cairn.domain.errors import InvalidInput
from cairn.domain.ids import new_id
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobHolds

MAX_NAME_CHARS = 200  # kinds, idempotency keys, checkpoint keys


@dataclass
class JobRow:
    """A job as stored, with the fields only the runner sees."""

    id: str
    kind: str
    created_at: datetime
    updated_at: datetime
    brain_id: str | None = None
    principal: str | None = None
    status: JobStatus = JobStatus.queued
    progress: float = 0.0
    message: str | None = None
    input: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    attempts: int = 0
    idempotency_key: str | None = None
    checkpoints: dict[str, Any] = field(default_factory=dict)
    lease_until: float | None = None  # POSIX seconds
    handed_over: int = 0  # attempts released by a stopping process (JobStore.release)
    handed_over_s: float = 0.0  # how long those attempts ran, in all

    @property
    def tries(self) -> int:
        """The attempts that count toward max_attempts: every claim but those handed back."""
        return self.attempts - self.handed_over

    @classmethod
    def new(
        cls,
        kind: str,
        payload: dict[str, Any],
        now: datetime,
        *,
        brain_id: str | None = None,
        principal: str | None = None,
        idempotency_key: str | None = None,
    ) -> JobRow:
        """A queued job, its kind, key and payload checked (InvalidInput); every runner starts one so."""
        check_name("job kind", kind)
        if idempotency_key is not None:
            check_name("idempotency_key", idempotency_key)
        return cls(
            id=new_id("job"),
            kind=kind,
            brain_id=brain_id,
            principal=principal,
            input=json_object(payload, "job payload"),
            idempotency_key=idempotency_key,
            created_at=now,
            updated_at=now,
        )

    def to_job(self) -> Job:
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "brain_id": self.brain_id,
            "principal": self.principal,
            "status": self.status,
            "progress": self.progress,
            "input": self.input,
            "result": self.result,
            "error": self.error,
            "attempts": self.attempts,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        if "message" in Job.model_fields:  # the domain model may not carry it yet
            data["message"] = self.message
        return Job.model_validate(data)


class JobStore(Protocol):
    def insert(self, row: JobRow) -> JobRow:
        """Store a new row; when its idempotency key is taken, store nothing and return that row."""

    def get(self, job_id: str) -> JobRow | None: ...

    def claim(
        self,
        now: datetime,
        lease_until: float,
        *,
        per_principal: int | None = None,
        job_id: str | None = None,
    ) -> JobRow | None:
        """Atomically take a claimable row (queued, or running with a lease before `now`), set it
        running with `lease_until`, attempts + 1, and return it. Fair between principals: the
        row whose principal (the rows without one are one group) has the fewest jobs running
        under a live lease (`lease_until >= now`, any process's) goes first, the oldest among
        equals; with `per_principal`, a row whose principal already has that many is not taken;
        with `job_id`, only that row is."""

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        """Apply `changes` (JobRow field names) if the row is running at `attempt`; False if not."""

    def release(self, job_id: str, attempt: int, now: datetime, ran_s: float) -> bool:
        """If the row is running at `attempt`, put it back in the queue (status queued, no lease,
        `handed_over` + 1, `handed_over_s` + `ran_s`, how long the attempt ran; `attempts` stays,
        so the next claim fences this attempt out), claimable at once, in its place by age as when
        it was queued; False if the attempt no longer holds it."""

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None) -> int:
        """ForgetsJobs.forget (ports/jobs.py) on the rows."""

    def close(self) -> None: ...


FINISHED = (JobStatus.completed, JobStatus.failed)


def held_by(row: JobRow) -> dict[str, Any]:
    """What a job holds that an erasure asks about (ports/jobs.py JobHolds)."""
    return {"input": row.input, "checkpoints": row.checkpoints, "result": row.result}


def plain_json(value: Any, what: str) -> Any:
    """A deep copy of `value` through JSON; InvalidInput when it is not plain JSON."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} is not plain JSON: {exc}") from exc


def json_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    copied: dict[str, Any] = plain_json(value, what)
    return copied


def check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS:
        raise InvalidInput(f"{what} must be a non-empty string of at most {MAX_NAME_CHARS} characters")
    return value
