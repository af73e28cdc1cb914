"""Ingesting the same file to the same path again, on the embedded SQLite runner and on Step
Functions (moto, the ingest state machine's tasks routed to the real task handler): a job still
queued or running is that ingest; a completed one answers only while the document still holds
what it stored; otherwise the file is ingested again (services/ingest/service.py `_queue`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Brain, JobStatus
from cairn.services.ingest.inputs import IngestResult
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters

PATH = "notes/plan.md"
V1 = b"# Plan\n\n" + b"Version one: ship the falcon release in spring. " * 40
V2 = b"# Plan\n\nVersion two: the falcon release is cancelled."


class ReadHook(MemoryBlobStore):
    """Calls `on_upload_read` (once) when a job first reads an upload: the job is running then."""

    def __init__(self) -> None:
        super().__init__()
        self.on_upload_read: Callable[[], None] | None = None

    def get(self, key: str) -> bytes:
        hook, self.on_upload_read = self.on_upload_read, None
        if hook is not None and key.startswith("uploads/") and "/staging/" not in key:
            hook()
        return super().get(key)


@pytest.fixture(params=["sqlite", "step_functions"])
def core(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Container]:
    clock = FakeClock()
    blobs = ReadHook()
    settings = Settings(data_dir=tmp_path, table="cairn-jobs", ingest_queue_bytes=512)
    with ExitStack() as stack:
        if request.param == "sqlite":
            jobs = SqliteJobRunner(tmp_path / "jobs.sqlite3", clock)
            stack.callback(jobs.close)
            adapters = replace(fake_adapters(clock=clock), blobs=blobs, jobs=jobs)
            yield build_container(settings, adapters)
            return
        from cairn.bootstrap.functions import job_tasks
        from cairn.entrypoints.aws_lambda import jobs_handler
        from tests.contract.aws_storage import fake_credentials
        from tests.support.moto_lambda import route_lambda
        from tests.support.sfn_runner import TASK_FUNCTION, moto_job_runner

        fake_credentials(monkeypatch)
        machines = ("job", "ingest", "consolidate")
        mj = stack.enter_context(
            moto_job_runner(clock, records="dynamodb", machines=machines, run_timeout_s=60)
        )
        adapters = replace(fake_adapters(clock=clock), records=mj.records, blobs=blobs, jobs=mj.runner)
        container = build_container(settings, adapters)
        stack.enter_context(
            route_lambda({TASK_FUNCTION: jobs_handler(lambda: job_tasks(container, settings))})
        )
        yield container


@pytest.fixture
def brain(core: Container) -> Brain:
    return core.brains.create("Team", slug="team")


def ingest(core: Container, brain: Brain, data: bytes = V1) -> IngestResult:
    return core.ingest.ingest_bytes(brain, data, name="plan.md", path=PATH)


def ingested(core: Container, brain: Brain) -> IngestResult:
    """V1 queued and its job run to completion."""
    first = ingest(core, brain)
    assert first.status == "queued" and first.job_id
    core.jobs.run_pending()
    assert core.jobs.status(first.job_id).status is JobStatus.completed
    assert core.documents.read(brain, PATH) == V1
    return first


def test_the_same_file_again_is_answered_by_its_completed_job(core: Container, brain: Brain) -> None:
    first = ingested(core, brain)
    again = ingest(core, brain)
    assert again.status == "completed" and again.reused and again.job_id == first.job_id
    assert again.document_id == first.document_id
    assert core.jobs.run_pending() == 0


def test_after_a_delete_the_same_file_is_ingested_again(core: Container, brain: Brain) -> None:
    first = ingested(core, brain)
    core.documents.delete(brain, PATH)

    again = ingest(core, brain)
    assert again.status == "queued" and again.job_id not in (None, first.job_id)
    assert ingest(core, brain).job_id == again.job_id  # its own retry is still the same job
    core.jobs.run_pending()
    assert core.jobs.status(again.job_id or "").status is JobStatus.completed
    assert core.documents.read(brain, PATH) == V1


def test_a_revert_to_the_ingested_file_is_written(core: Container, brain: Brain) -> None:
    first = ingested(core, brain)
    core.documents.write(brain, PATH, V2)

    revert = ingest(core, brain)
    assert revert.status == "queued" and revert.job_id not in (None, first.job_id)
    core.jobs.run_pending()
    assert core.documents.read(brain, PATH) == V1
    # and once it holds those bytes again, asking once more changes nothing
    assert ingest(core, brain).status == "completed"
    assert core.jobs.run_pending() == 0


def test_a_retried_upload_while_its_job_is_queued_or_running_is_that_job(
    core: Container, brain: Brain
) -> None:
    first = ingest(core, brain)
    assert first.status == "queued" and first.job_id
    assert ingest(core, brain).job_id == first.job_id  # queued

    during: list[tuple[JobStatus, IngestResult]] = []

    def retry() -> None:
        during.append((core.jobs.status(first.job_id or "").status, ingest(core, brain)))

    assert isinstance(core.adapters.blobs, ReadHook)
    core.adapters.blobs.on_upload_read = retry
    core.jobs.run_pending()

    ((status, retried),) = during
    assert status is JobStatus.running
    assert retried.status == "queued" and retried.job_id == first.job_id
    assert core.jobs.run_pending() == 0
    assert core.jobs.status(first.job_id).status is JobStatus.completed
    assert core.documents.read(brain, PATH) == V1
    with pytest.raises(NotFound):
        core.documents.get(brain, "ingest/plan.md")


def test_a_text_file_too_long_to_store_is_refused_before_it_is_queued(
    core: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A markdown file's text is the file's, so one longer than a note may be is said at once
    (it was acknowledged 202 and its job then always failed)."""
    monkeypatch.setattr(core.ingest, "max_content_chars", 2_000)
    with pytest.raises(InvalidInput, match="exceeds 2000 characters"):
        ingest(core, brain, b"# Long\n\n" + b"word " * 600)
    assert not [k for k in core.adapters.blobs.items if k.startswith("uploads/")]  # type: ignore[attr-defined]
    with pytest.raises(NotFound):
        core.documents.get(brain, PATH)
    assert ingest(core, brain).status == "queued"  # one within the bound is still queued
