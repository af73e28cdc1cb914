"""GET /v1/jobs/{jobId}: a background job's status, progress and result."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path

from cairn.auth import access
from cairn.domain.errors import Forbidden
from cairn.domain.models import Job
from cairn.entrypoints.wire import Timestamp, Wire
from cairn.ports.jobs import JobRunner
from cairn.services.brains import BrainService

JobIdParam = Annotated[str, Path(alias="jobId", min_length=1, max_length=128, description="Job id (job_...)")]


class JobRecord(Wire):
    id: str
    kind: str
    status: Literal["queued", "running", "completed", "failed"]
    progress: float
    message: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    attempts: int
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, job: Job) -> JobRecord:
        return cls(
            id=job.id,
            kind=job.kind,
            status=job.status.value,
            progress=job.progress,
            message=job.message,
            result=job.result,
            error=job.error,
            attempts=job.attempts,
            created_at=job.created_at,
            updated_at=job.updated_at,
        )


def jobs_router(jobs: JobRunner, brains: BrainService) -> APIRouter:
    router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

    @router.get("/{jobId}", response_model_exclude_none=True)
    def get_job(job_id: JobIdParam) -> JobRecord:
        """A job's status (queued, running, completed, failed), progress in [0, 1] and result;
        readable by whoever may read the job's brain."""
        job = jobs.status(job_id)
        if job.brain_id is not None:
            brains.get(job.brain_id)  # Forbidden for a caller who may not read the brain
        elif access.current() is not None:
            raise Forbidden("this job belongs to no brain the caller may read")
        return JobRecord.of(job)

    return router
