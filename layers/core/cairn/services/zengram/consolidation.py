"""zengram's consolidation routes on Cairn's consolidation job (services/memory/consolidation.py), which
runs on the JobRunner: the embedded queue, or Step Functions on AWS.

One consolidation per brain at a time: the brain's last run is a record (runs.py), taken
with a conditional write, so two concurrent POSTs start one job and the other is `skipped`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from cairn.domain.errors import Conflict, Forbidden, NotFound
from cairn.domain.models import Brain, Job, JobStatus
from cairn.services.memory.consolidation import CONSOLIDATE_JOB
from cairn.services.zengram.runs import LastRun
from cairn.services.zengram.shapes import iso
from cairn.services.zengram.validate import Refused

if TYPE_CHECKING:
    from cairn.services.zengram.deps import ZengramDeps

SYNC_WAIT_S = 110.0
"""How long `?sync=true` waits (zengram's wrapper gives consolidation 120 s)."""
SYNC_WAIT_LAMBDA_S = 24.0
"""On AWS, within the API function's 29 s (API Gateway's limit): a longer run answers `partial`
with the job still running (poll it with GET /consolidate/job/<id>)."""
PICKUP_S = 0.3
"""How long a queued job may wait for the server's worker before the request runs it itself."""
_STATUS = {
    JobStatus.queued: "running",
    JobStatus.running: "running",
    JobStatus.completed: "complete",
    JobStatus.failed: "failed",
}


def _running(c: ZengramDeps, last: LastRun | None) -> bool:
    """Whether the brain's last consolidation (its record) is still queued or running."""
    if last is None:
        return False
    try:
        return c.jobs.status(last.job_id).status in (JobStatus.queued, JobStatus.running)
    except NotFound:
        return False


def start(c: ZengramDeps, brain: Brain, *, sync: bool) -> tuple[int, dict[str, Any]]:
    last = c.runs.last(brain.id)
    if _running(c, last):
        return 409, {"status": "skipped", "reason": "Consolidation already running"}
    job = c.consolidation.queue(brain)
    try:
        c.runs.begin(brain.id, job.id, iso(job.created_at), after=last)
    except Conflict:
        return 409, {"status": "skipped", "reason": "Consolidation already running"}
    if not sync:
        return 202, {"status": "started", "job_id": job.id}
    began = time.monotonic()
    wait = SYNC_WAIT_LAMBDA_S if c.options.on_aws else SYNC_WAIT_S
    while True:
        done = c.jobs.status(job.id)
        if done.status in (JobStatus.completed, JobStatus.failed) or time.monotonic() - began > wait:
            break
        if done.status is JobStatus.queued and time.monotonic() - began > PICKUP_S:
            c.jobs.run_pending()  # no worker took it (a server without one): run it here
        time.sleep(0.05)
    return 200, summary(done)


def summary(job: Job) -> dict[str, Any]:
    """A run's summary in zengram's terms, from Cairn's step results."""
    result = job.result or {}
    merge, promote, prune = (result.get(step, {}) for step in ("merge", "promote", "prune"))
    started = job.created_at
    out: dict[str, Any] = {
        "status": "complete" if job.status is JobStatus.completed else "partial",
        "job_id": job.id,
        "memories_processed": int(merge.get("notes", 0) or 0),
        "groups_processed": int(merge.get("groups", 0) or 0),
        "merged_facts": int(merge.get("merged", 0) or 0),
        "contradictions_found": 0,
        "connections_found": 0,
        "compressed_summaries": int((result.get("summaries") or {}).get("written", 0) or 0),
        "skipped_dedup": 0,
        "categories_updated": 0,
        "promoted": int(promote.get("promoted", 0) or 0),
        "events_expired": int(prune.get("events_expired", 0) or 0),
        "duration_ms": int((job.updated_at - started).total_seconds() * 1000),
        "llm": None,
    }
    if job.error:
        out["errors"] = [job.error]
    return out


def job_status(c: ZengramDeps, job_id: str) -> dict[str, Any]:
    try:
        job = c.job_status.status(job_id)
    except (NotFound, Forbidden):  # another brain's job is not told apart from none
        raise Refused(404, "Job not found or expired") from None
    if job.kind != CONSOLIDATE_JOB:
        raise Refused(404, "Job not found or expired")
    finished = job.status in (JobStatus.completed, JobStatus.failed)
    return {
        "job_id": job.id,
        "status": _STATUS[job.status],
        "startedAt": iso(job.created_at),
        "result": summary(job) if finished and job.status is JobStatus.completed else None,
        "error": job.error,
    }


def status(c: ZengramDeps, brain: Brain) -> dict[str, Any]:
    last = c.runs.last(brain.id)
    running = _running(c, last)
    generator = c.options.generator
    return {
        "is_running": running,
        "last_run_at": last.started_at if last else None,
        "llm": {"provider": generator, "model": getattr(c.generator, "model_id", None)},
        "enabled": True,
        "interval": c.options.consolidation_schedule or "manual",
    }
