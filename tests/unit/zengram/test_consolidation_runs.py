"""What a zengram consolidation run takes on counts as consolidated only once its job completed; a
run that failed or is still going leaves it waiting for the next (services/zengram/consolidation.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from cairn.domain.errors import NotFound
from cairn.domain.models import Job, JobStatus
from cairn.services.zengram.consolidation import settled_until, summary
from cairn.services.zengram.runs import LastRun, Taken

BEFORE, CUTOFF = "2026-05-01T09:00:00.000Z", "2026-05-02T09:00:00.000Z"
RUN = LastRun("job_1", BEFORE, 1, Taken(waiting=3, groups=1, settled=BEFORE, cutoff=CUTOFF))
AT = datetime(2026, 5, 2, 10, tzinfo=UTC)


@dataclass
class Jobs:
    status_of: JobStatus | None

    def status(self, job_id: str) -> Job:
        if self.status_of is None:
            raise NotFound("no such job")
        return Job(id=job_id, kind="consolidate", status=self.status_of, created_at=AT, updated_at=AT)


@dataclass
class Deps:
    jobs: Jobs


@pytest.mark.parametrize(
    ("status", "settled"),
    [
        (JobStatus.completed, CUTOFF),
        (JobStatus.failed, BEFORE),
        (JobStatus.running, BEFORE),
        (JobStatus.queued, BEFORE),
        (None, BEFORE),  # the job is gone: nothing proves it completed
    ],
)
def test_only_a_completed_run_moves_the_settled_moment(status: JobStatus | None, settled: str) -> None:
    assert settled_until(cast(Any, Deps(Jobs(status))), RUN) == settled


def test_before_any_run_nothing_is_settled() -> None:
    assert settled_until(cast(Any, Deps(Jobs(JobStatus.completed))), None) is None


def test_a_summary_counts_what_its_run_took_on() -> None:
    job = Job(id="job_1", kind="consolidate", status=JobStatus.completed, created_at=AT, updated_at=AT)

    taken = summary(job, RUN.taken)
    nothing = summary(job, Taken())

    assert taken["memories_processed"] == 3 and taken["groups_processed"] == 1 and "message" not in taken
    assert nothing["memories_processed"] == 0 and nothing["message"] == "No unconsolidated memories found"
