"""zengram's consolidation routes on Cairn's consolidation job (services/memory/consolidation.py), which
runs on the JobRunner: the embedded queue, or Step Functions on AWS.

One consolidation per brain at a time: the brain's last run is a record (runs.py), taken
with a conditional write, so two concurrent POSTs start one job and the other is `skipped`. The
job is keyed on the run it follows, so the requests that race share it: a skipped one queues none.

Each run takes on the memories waiting for consolidation, as zengram's runs do: every memory
created since the moment the completed runs before it reached (runs.py). Its summary counts them
(`memories_processed`) and their clients (`groups_processed`); once its job completes they count
as consolidated (`consolidated` in stats, exports and full search rows), and the next run takes
on only newer ones. The job's own work on them is the event expiry of its prune step.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from cairn.domain.errors import Conflict, Forbidden, NotFound
from cairn.domain.models import Brain, Document, Job, JobStatus
from cairn.services.memory.consolidation import CONSOLIDATE_JOB
from cairn.services.zengram.base import BRIEFED_TYPES
from cairn.services.zengram.runs import LastRun, Taken
from cairn.services.zengram.shapes import iso
from cairn.services.zengram.validate import Refused, parse_time

if TYPE_CHECKING:
    from cairn.services.zengram.deps import ZengramDeps

SYNC_WAIT_S = 110.0
"""How long `?sync=true` waits (zengram's wrapper gives consolidation 120 s)."""
SYNC_WAIT_LAMBDA_S = 24.0
"""On AWS, within the API function's 29 s (API Gateway's limit): a longer run answers `partial`
with the job still running (poll it with GET /consolidate/job/<id>)."""
PICKUP_S = 0.3
"""How long a queued job may wait for the server's worker before the request runs it itself."""
NOTHING_WAITING = "No unconsolidated memories found"
MAX_WAITING = 1_000_000
"""How many waiting memories one run reads at most, newest first: a bound on one request's reads,
not a batch size (past it, the oldest waiting would be settled without being counted)."""
_SKEW = timedelta(minutes=1)
"""How far before the settled moment the by-time index is read: a memory's index entry is written
just before its document takes its creation time."""
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
    taken = _take(c, brain, settled_until(c, last))
    # Keyed on the run it follows: requests racing to follow it share one job, which only the
    # winner of `begin` records; the others' answer is `skipped`, and nothing else was queued.
    after = last.job_id if last is not None else "none"
    job = c.consolidation.queue(brain, idempotency_key=f"zengram-consolidate:{brain.id}:after:{after}")
    try:
        c.runs.begin(brain.id, job.id, iso(job.created_at), after=last, taken=taken)
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
            c.jobs.run_one(job.id)  # no worker took it (none, or all busy): run it, and only it, here
        time.sleep(0.05)
    return 200, summary(done, taken)


def settled_until(c: ZengramDeps, last: LastRun | None) -> str | None:
    """The moment up to which the brain's memories are consolidated (ISO 8601): the last run's
    cutoff once its job completed, else what was settled before it; None before any run."""
    if last is None:
        return None
    try:
        completed = c.jobs.status(last.job_id).status is JobStatus.completed
    except NotFound:
        completed = False
    return last.taken.cutoff if completed else last.taken.settled


def consolidated_until(c: ZengramDeps, brain: Brain) -> datetime | None:
    """settled_until for the brain, as a time: a memory created then or before is consolidated."""
    settled = settled_until(c, c.runs.last(brain.id))
    return parse_time(settled, "settled") if settled else None


def _take(c: ZengramDeps, brain: Brain, settled: str | None) -> Taken:
    """The memories waiting since `settled`: those of zengram's types, not deleted, created after it."""
    after = parse_time(settled, "settled") if settled else None
    since = after - _SKEW if after is not None else datetime.min.replace(tzinfo=UTC)
    waiting = [d for d in c.memories.since(brain, since, limit=MAX_WAITING) if _waits(d, after)]
    if not waiting:
        return Taken(settled=settled, cutoff=settled)
    clients = {(d.memory.client_id if d.memory else None) or "global" for d in waiting}
    cutoff = iso(max(d.created_at for d in waiting))
    return Taken(waiting=len(waiting), groups=len(clients), settled=settled, cutoff=cutoff)


def _waits(doc: Document, after: datetime | None) -> bool:
    return (
        doc.memory is not None
        and doc.memory.type in BRIEFED_TYPES
        and doc.deleted_at is None
        and (after is None or doc.created_at > after)
    )


def summary(job: Job, taken: Taken | None) -> dict[str, Any]:
    """A run's summary in zengram's terms: what the run took on, and Cairn's step results."""
    result = job.result or {}
    merge, promote, prune = (result.get(step, {}) for step in ("merge", "promote", "prune"))
    took = taken or Taken()
    started = job.created_at
    out: dict[str, Any] = {
        "status": "complete" if job.status is JobStatus.completed else "partial",
        "job_id": job.id,
        "memories_processed": took.waiting,
        "groups_processed": took.groups,
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
    if not took.waiting:
        out["message"] = NOTHING_WAITING
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
        "result": summary(job, c.runs.of_job(job.brain_id or "", job.id))
        if finished and job.status is JobStatus.completed
        else None,
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
