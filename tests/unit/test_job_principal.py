"""Jobs run as the principal that started them: its brain checks apply inside the job too."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.models import JobStatus
from cairn.services.memory.consolidation import CONSOLIDATE_JOB
from tests.fakes.container import fake_container


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


def test_a_job_started_by_a_principal_records_it_and_runs_as_it(container: Container) -> None:
    alice = Principal("acme", "alice", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(alice, ADMIN):
        brain = container.brains.create("Team")  # private: alice's
    with access.acting_as(alice, WRITE):
        job = container.consolidation.queue(brain)
    container.jobs.run_pending()

    done = container.jobs.status(job.id)
    assert done.principal == "acme/alice" and done.status is JobStatus.completed, done.error


def test_a_job_whose_starter_may_not_touch_the_brain_fails_forbidden(container: Container) -> None:
    alice = Principal("acme", "alice", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(alice, ADMIN):
        brain = container.brains.create("Team")
    # A job recorded as started by someone else (another subject of the same tenant): a private
    # brain is alice's alone, so the job, acting as its starter, is refused.
    job = container.jobs.start(CONSOLIDATE_JOB, {}, brain_id=brain.id, principal="acme/bob")
    container.jobs.run_pending()

    failed = container.jobs.status(job.id)
    assert failed.status is JobStatus.failed and failed.error and "another tenant or owner" in failed.error


def test_a_job_nobody_started_runs_as_the_system(container: Container) -> None:
    brain = container.brains.create("Team")
    job = container.jobs.start(CONSOLIDATE_JOB, {}, brain_id=brain.id)
    container.jobs.run_pending()
    assert container.jobs.status(job.id).status is JobStatus.completed
