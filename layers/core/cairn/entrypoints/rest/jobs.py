"""GET /v1/jobs/{jobId}: a background job's status, progress and result."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path

from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.wire import Timestamp, Wire
from cairn.services.jobs.visible_jobs import VisibleJobs

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


def jobs_router(jobs: VisibleJobs) -> APIRouter:
    router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=ScopedRoute)

    @router.get("/{jobId}", response_model_exclude_none=True)
    def get_job(job_id: JobIdParam) -> JobRecord:
        """A job's status (queued, running, completed, failed), progress in [0, 1] and result;
        readable by whoever may read the job's brain."""
        return JobRecord.model_validate(jobs.status(job_id))

    return router
