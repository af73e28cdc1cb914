"""StartsJobs: how every runner (the embedded engine, the fake, Step Functions) starts a job."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from cairn.adapters.local.job_rows import JobRow
from cairn.domain.models import Job
from cairn.ports.clock import Clock

log = logging.getLogger("cairn.jobs")


class StartsJobs(ABC):
    """How every runner starts a job: the row checked and made (JobRow.new), then submitted its way."""

    _clock: Clock
    _start_listeners: tuple[Callable[[Job], None], ...] = ()  # on_start's, per runner once added

    def start(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        brain_id: str | None = None,
        principal: str | None = None,
        idempotency_key: str | None = None,
    ) -> Job:
        row = JobRow.new(
            kind,
            payload,
            self._clock.now(),
            brain_id=brain_id,
            principal=principal,
            idempotency_key=idempotency_key,
        )
        job = self._submit(row)
        if job.id == row.id:
            for listener in self._start_listeners:
                try:
                    listener(job)
                except Exception:  # the job is queued; a listing that misses it is not worth failing it
                    log.exception("a job start listener failed for %s", job.id)
        return job

    def on_start(self, listener: Callable[[Job], None]) -> None:
        self._start_listeners = (*self._start_listeners, listener)

    @abstractmethod
    def _submit(self, row: JobRow) -> Job:
        """Store and run `row`, or the job its idempotency key already names; Conflict when that
        job is of another kind."""
