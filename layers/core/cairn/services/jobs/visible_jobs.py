"""Background jobs' status as the access rule lets a caller see it (auth/access.py): a job is
visible to whoever may read its brain; one that belongs to no brain only to the system. To anyone
else it does not exist."""

from __future__ import annotations

from cairn.auth import access
from cairn.auth.principal import READ
from cairn.domain.errors import Forbidden, NotFound
from cairn.domain.models import Job
from cairn.ports.jobs import JobRunner
from cairn.services.brains import BrainService


class VisibleJobs:
    def __init__(self, jobs: JobRunner, brains: BrainService) -> None:
        self.jobs = jobs
        self.brains = brains

    def status(self, job_id: str) -> Job:
        """The job; NotFound for an unknown id and, alike, for a job the caller may not see (its
        brain unreadable to it, or no brain): the answer never tells that such a job exists, nor
        names its brain."""
        job = self.jobs.status(job_id)
        if not self._visible(job):
            raise NotFound(f"job {job_id!r} not found")
        return job

    def _visible(self, job: Job) -> bool:
        if job.brain_id is None:
            return access.current() is None
        try:
            with access.needing(READ):
                self.brains.get(job.brain_id)
        except (Forbidden, NotFound):
            return False
        return True
