"""Which jobs each brain has had, newest first: the listing behind the web UI's jobs page.

Runners keep jobs by id only; this log records a pointer when a job with a brain is queued (the
runner's start announcement, ports/jobs.py AnnouncesStarts), and reads each listed job's status
from the runner, so progress shown is the runner's own.

    pk = "jobs#<brain id>", sk = "job#<13-digit inverted start ms>#<job id>"
"""

from __future__ import annotations

from typing import Final

from cairn.domain.errors import NotFound
from cairn.domain.models import Brain, Job, JobStatus
from cairn.ports.jobs import ForgetsJobs, JobHolds, JobRunner
from cairn.ports.records import Item, RecordStore

NEVER: Final = 10**13


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
        ids: list[str] = []
        after: str | None = None
        while True:
            page = self.records.query(jobs_pk(brain_id), "job#", after=after)
            ids += [str(item.data["id"]) for item in page.items]
            if page.next_after is None:
                return self.runner.forget(ids, holds)
            after = page.next_after

    def unfinished(self, brain_id: str) -> list[tuple[str, str]]:
        """The keys of the brain's pointers to jobs its runner holds and has not finished (queued
        or running): a brain's deletion keeps them until those jobs end, then forgets them. Empty
        on a runner that cannot forget: nothing would ever forget them, so none is kept."""
        if not isinstance(self.runner, ForgetsJobs):
            return []
        keys: list[tuple[str, str]] = []
        after: str | None = None
        while True:
            page = self.records.query(jobs_pk(brain_id), "job#", after=after)
            for item in page.items:
                try:
                    job = self.runner.status(str(item.data["id"]))
                except NotFound:  # forgotten already
                    continue
                if job.status in (JobStatus.queued, JobStatus.running):
                    keys.append((item.pk, item.sk))
            if page.next_after is None:
                return keys
            after = page.next_after

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
