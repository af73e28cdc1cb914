"""Which jobs each brain has had, newest first: the listing behind the web UI's jobs page.

Runners keep jobs by id only; this log records a pointer when a job with a brain is queued (the
runner's start announcement, ports/jobs.py AnnouncesStarts), and reads each listed job's status
from the runner, so progress shown is the runner's own.

    pk = "jobs#<brain id>", sk = "job#<13-digit inverted start ms>#<job id>"

A job to forget once it has finished (`forget_once_finished`) is marked under
pk = "jobs-to-forget", sk = "<job id>", until the sweep forgets it (`forget_marked`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from cairn.domain.errors import NotFound
from cairn.domain.models import Brain, Job, JobStatus
from cairn.ports.jobs import ForgetsJobs, JobHolds, JobRunner
from cairn.ports.records import Item, RecordStore
from cairn.services.repositories import all_items

NEVER: Final = 10**13
_TO_FORGET: Final = "jobs-to-forget"


def jobs_pk(brain_id: str) -> str:
    return f"jobs#{brain_id}"


class JobLog:
    def __init__(self, records: RecordStore, runner: JobRunner) -> None:
        self.records = records
        self.runner = runner

    def started(self, job: Job) -> None:
        if job.brain_id is None:
            return
        millis = int(job.created_at.timestamp() * 1000)
        sk = f"job#{NEVER - millis:013d}#{job.id}"
        self.records.put(Item(jobs_pk(job.brain_id), sk, {"id": job.id, "kind": job.kind}))

    def forget(self, brain_id: str, holds: JobHolds | None = None) -> int:
        """Delete the brain's finished jobs that `holds` picks (all without it) from the runner
        (ports/jobs.py ForgetsJobs), for an erasure; their pointers here stay (`recent` passes
        over a job its runner no longer knows). A runner that cannot forget forgets nothing."""
        if not isinstance(self.runner, ForgetsJobs):
            return 0
        ids = [str(item.data["id"]) for item in all_items(self.records, jobs_pk(brain_id), "job#")]
        return self.runner.forget(ids, holds)

    def forget_once_finished(self, job: Job) -> None:
        """Have the sweep forget `job` once its runner has finished it: a job that refuses to write
        into an agent scope erased after it was queued finishes after the erasure forgot the
        brain's finished jobs, and its input names the scope's path."""
        self.records.put(Item(_TO_FORGET, job.id, {}))

    def forget_marked(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Forget the marked jobs that have finished (a chore of the sweep), each mark once its job
        is gone; returns how many were forgotten. One still queued or running keeps its mark."""
        forgotten = 0
        for item in all_items(self.records, _TO_FORGET):
            if stop():
                break
            try:
                job: Job | None = self.runner.status(item.sk)
            except NotFound:
                job = None
            if job is not None and job.status in (JobStatus.queued, JobStatus.running):
                continue
            if job is not None and isinstance(self.runner, ForgetsJobs):
                if not self.runner.forget([item.sk]):
                    continue  # changed as it was read: the next sweep
                forgotten += 1
            self.records.delete(item.pk, item.sk)
        return forgotten

    def unfinished(self, brain_id: str) -> list[tuple[str, str]]:
        """The keys of the brain's pointers to jobs its runner holds and has not finished (queued
        or running): a brain's deletion keeps them until those jobs end, then forgets them. Empty
        on a runner that cannot forget: nothing would ever forget them, so none is kept."""
        if not isinstance(self.runner, ForgetsJobs):
            return []
        keys: list[tuple[str, str]] = []
        for item in all_items(self.records, jobs_pk(brain_id), "job#"):
            try:
                job = self.runner.status(str(item.data["id"]))
            except NotFound:  # forgotten already
                continue
            if job.status in (JobStatus.queued, JobStatus.running):
                keys.append((item.pk, item.sk))
        return keys

    def recent(self, brain: Brain, limit: int = 20) -> list[Job]:
        """The brain's latest jobs as their runner reports them now (the caller may read the brain)."""
        page = self.records.query(jobs_pk(brain.id), "job#", limit=limit)
        jobs = []
        for item in page.items:
            try:
                jobs.append(self.runner.status(str(item.data["id"])))
            except NotFound:  # a runner that forgot it (a wiped queue): nothing to show
                continue
        return jobs
