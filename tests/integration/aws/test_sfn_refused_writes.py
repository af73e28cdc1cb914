"""A job's progress and checkpoint writes the DynamoDB table refuses (throttled after botocore's
own retries, or a transaction conflicting past its retries), on Step Functions under moto: as in
the embedded engine, the report is skipped, the checkpoint tried again, and the attempt goes on."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.domain.errors import Conflict
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext
from cairn.ports.records import Delete, Item, Put
from tests.contract.aws_storage import fake_credentials
from tests.fakes.clock import FakeClock
from tests.support.sfn_runner import MotoJobs, moto_job_runner


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoJobs]:
    fake_credentials(monkeypatch)
    with moto_job_runner(FakeClock(), "dynamodb", run_timeout_s=20, refused_retry_s=0.001) as ready:
        yield ready


class Refusals:
    """DynamoDB refusing the next calls of an operation with an error code, before they are sent
    (botocore's `before-call` hook: the client raises the ClientError the service would)."""

    def __init__(self, records: Any) -> None:
        assert isinstance(records, DynamoRecordStore)
        self.left: Counter[tuple[str, str]] = Counter()
        self.refused: Counter[str] = Counter()
        records.client.meta.events.register("before-call.dynamodb.*", self._call)

    def arm(self, operation: str, code: str, times: int) -> None:
        self.left[(operation, code)] = times

    def _call(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        for (operation, code), left in self.left.items():
            if operation == model.name and left > 0:
                self.left[(operation, code)] -= 1
                self.refused[f"{operation} {code}"] += 1
                error = {"Error": {"Code": code, "Message": "refused by the test"}}
                return AWSResponse("https://dynamodb.us-east-1.amazonaws.com", 400, {}, None), error
        return None


def test_a_refused_progress_report_is_skipped_and_a_refused_checkpoint_goes_in_without_a_retry(
    jobs: MotoJobs, caplog: pytest.LogCaptureFixture
) -> None:
    refusals = Refusals(jobs.records)
    runs: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.attempts)
        refusals.arm("UpdateItem", "ProvisionedThroughputExceededException", 2)
        ctx.progress(0.25, "refused")
        ctx.progress(0.5, "refused too")
        ctx.progress(0.75, "written")
        refusals.arm("TransactWriteItems", "ThrottlingException", 3)
        ctx.checkpoint("step", {"n": 1})
        return {"seen": ctx.checkpoints()}

    jobs.runner.register("work", handle)
    with caplog.at_level(logging.INFO, logger="cairn.jobs.sfn"):
        job = jobs.runner.start("work", {})
        jobs.runner.run_pending()

    done = jobs.runner.status(job.id)
    assert (done.status, done.attempts, runs) == (JobStatus.completed, 1, [1]), done.error
    assert done.result == {"seen": {"step": {"n": 1}}} and jobs.waits == []  # no state machine retry
    assert refusals.refused == {
        "UpdateItem ProvisionedThroughputExceededException": 2,
        "TransactWriteItems ThrottlingException": 3,
    }
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.exc_info for r in said] == [None, None]
    assert "progress" in said[0].getMessage() and "checkpoint 'step'" in said[1].getMessage()


def test_a_checkpoint_whose_transaction_keeps_conflicting_is_tried_again(
    jobs: MotoJobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record store's transactions kept conflicting past its own retries (Conflict), more
    times than the job records retry a checkpoint: the checkpoint is tried again and goes in."""
    store = jobs.records
    conflicts = [0]
    sent = store.transact

    def transact(ops: Sequence[Put | Delete]) -> list[Item]:
        if conflicts[0] < 12:
            conflicts[0] += 1
            raise Conflict("transaction kept conflicting with concurrent transactions; gave up waiting")
        return sent(ops)

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        monkeypatch.setattr(store, "transact", transact)
        ctx.checkpoint("step")
        monkeypatch.setattr(store, "transact", sent)
        return {"attempt": job.attempts, "seen": ctx.checkpoints()}

    jobs.runner.register("work", handle)
    job = jobs.runner.start("work", {})
    jobs.runner.run_pending()

    done = jobs.runner.status(job.id)
    assert (done.status, done.result) == (JobStatus.completed, {"attempt": 1, "seen": {"step": True}}), (
        done.error
    )
    assert conflicts == [12] and jobs.waits == []


def test_a_refused_outcome_write_goes_in_without_running_the_finished_job_again(
    jobs: MotoJobs, caplog: pytest.LogCaptureFixture
) -> None:
    """The handler is done and its result kept only in the task: the table refusing the write of
    the job's outcome must not fail the task, whose state machine would run the job again."""
    refusals = Refusals(jobs.records)
    runs: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.attempts)
        refusals.arm("UpdateItem", "ThrottlingException", 3)  # the outcome's write, next
        return {"done": True}

    jobs.runner.register("work", handle)
    with caplog.at_level(logging.INFO, logger="cairn.jobs.sfn"):
        job = jobs.runner.start("work", {})
        jobs.runner.run_pending()

    done = jobs.runner.status(job.id)
    assert (done.status, done.attempts, runs, done.result) == (JobStatus.completed, 1, [1], {"done": True})
    assert refusals.refused == {"UpdateItem ThrottlingException": 3} and jobs.waits == []
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "the outcome of job" in said[0]
