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


def test_a_job_whose_starter_may_not_touch_the_brain_fails_as_if_it_were_none(container: Container) -> None:
    alice = Principal("acme", "alice", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(alice, ADMIN):
        brain = container.brains.create("Team")
    # A job recorded as started by someone else (another subject of the same tenant): a private
    # brain is alice's alone, so the job, acting as its starter, is refused.
    job = container.jobs.start(CONSOLIDATE_JOB, {}, brain_id=brain.id, principal="acme/bob")
    container.jobs.run_pending()

    failed = container.jobs.status(job.id)
    assert failed.status is JobStatus.failed and failed.error == f"brain not found: {brain.id!r}"
    assert "Team" not in failed.error


def test_a_job_nobody_started_runs_as_the_system(container: Container) -> None:
    brain = container.brains.create("Team")
    job = container.jobs.start(CONSOLIDATE_JOB, {}, brain_id=brain.id)
    container.jobs.run_pending()
    assert container.jobs.status(job.id).status is JobStatus.completed


def test_a_job_keeps_its_starters_brain_list_and_scopes(container: Container) -> None:
    alice = Principal("acme", "alice", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(alice, ADMIN):
        mine, other = container.brains.create("Team"), container.brains.create("Other")
    key = Principal("acme", "key:ci", frozenset({READ, WRITE}), Via.api_key, frozenset({mine.id}))
    with access.acting_as(key, WRITE):
        job = container.consolidation.queue(mine)  # a key limited to alice's private brain
    container.jobs.run_pending()
    done = container.jobs.status(job.id)
    assert done.status is JobStatus.completed, done.error  # its own brain: the job may, as the key may

    # the job acts with the key's reach, not more: not the other brain, not a scope it lacked
    with access.on_behalf_of(done.principal):
        current = access.current()
        assert current is not None and current.principal.brains == frozenset({mine.id})
        assert not access.may_see(current.principal, other)
    reader = Principal("acme", "key:ro", frozenset({READ}), Via.api_key, frozenset({mine.id}))
    with access.acting_as(reader, READ):
        recorded = access.job_principal()
    with access.on_behalf_of(recorded):
        current = access.current()
        assert current is not None and current.principal.scopes == frozenset({READ})


def test_a_job_queued_with_a_key_revoked_since_does_nothing(container: Container) -> None:
    brain = container.brains.create("Team")
    key = container.keys.create(name="ci", tenant="local", scopes=[READ, WRITE], brains=[brain.id])
    principal = container.authenticator.authenticate(f"Bearer {key.plaintext}", None)
    with access.acting_as(principal, WRITE):
        job = container.consolidation.queue(brain)
    container.keys.revoke(key.key.id)  # after the job was queued, before it runs
    container.jobs.run_pending()

    failed = container.jobs.status(job.id)
    assert failed.status is JobStatus.failed and failed.error and "revoked" in failed.error


def test_a_job_nobody_started_runs_as_the_system_even_in_a_callers_thread(container: Container) -> None:
    mine, theirs = container.brains.create("Mine"), container.brains.create("Theirs")
    job = container.jobs.start(CONSOLIDATE_JOB, {}, brain_id=theirs.id)  # a schedule's
    key = Principal("local", "key:ci", frozenset({READ, WRITE}), Via.api_key, frozenset({mine.id}))
    with access.acting_as(key, WRITE):  # a request running the queue itself (zengram's ?sync=true)
        container.jobs.run_pending()
        with access.on_behalf_of(None):
            assert access.current() is None

    done = container.jobs.status(job.id)
    assert done.status is JobStatus.completed, done.error
