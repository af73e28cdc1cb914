"""StepFunctionsJobRunner without Step Functions: execution naming, the job records and their
transitions, fencing, reconciliation, and the task dispatcher, against a fake client."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from cairn.adapters.aws.sfn_attempt import JobAttemptFailed, failure_text
from cairn.adapters.aws.sfn_executions import JobNotStarted
from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
from cairn.adapters.aws.sfn_names import execution_arn, execution_name, job_id_for_key
from cairn.adapters.aws.sfn_tasks import task_handler
from cairn.domain.errors import CairnError, Conflict, InvalidInput, NotFound
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:cairn-job"
INGEST = "arn:aws:states:us-east-1:123456789012:stateMachine:cairn-ingest"


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "refused"}}, operation)


class FakeSfn:
    """StartExecution/DescribeExecution with Step Functions' name rules; executions never run."""

    def __init__(self, records: MemoryRecordStore) -> None:
        self.records = records
        self.executions: dict[str, dict[str, Any]] = {}  # execution ARN -> its description
        self.calls: list[dict[str, Any]] = []
        self.refuse: str | None = None
        self.stored_at_start: list[bool] = []

    def start_execution(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        job_id = json.loads(kwargs["input"])["job_id"]
        self.stored_at_start.append(self.records.get(f"job#{job_id}", "job") is not None)
        if self.refuse:
            raise client_error(self.refuse, "StartExecution")
        arn = execution_arn(kwargs["stateMachineArn"], kwargs["name"])
        found = self.executions.get(arn)
        if found is not None and not (found["input"] == kwargs["input"] and found["status"] == "RUNNING"):
            raise client_error("ExecutionAlreadyExists", "StartExecution")
        self.executions.setdefault(arn, {"input": kwargs["input"], "status": "RUNNING"})
        return {"executionArn": arn}

    def describe_execution(self, **kwargs: Any) -> dict[str, Any]:
        found = self.executions.get(kwargs["executionArn"])
        if found is None:
            raise client_error("ExecutionDoesNotExist", "DescribeExecution")
        return dict(found)

    def end(self, arn: str, status: str, error: str | None = None) -> None:
        self.executions[arn].update(status=status, error=error)


@pytest.fixture
def records() -> MemoryRecordStore:
    return MemoryRecordStore()


@pytest.fixture
def sfn(records: MemoryRecordStore) -> FakeSfn:
    return FakeSfn(records)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runner(sfn: FakeSfn, records: MemoryRecordStore, clock: FakeClock) -> StepFunctionsJobRunner:
    return StepFunctionsJobRunner(sfn, records, clock, {"job": MACHINE, "ingest": INGEST})


# -- naming ------------------------------------------------------------------------------------


MADE = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_execution_names_are_deterministic_valid_and_specific_to_the_job_input() -> None:
    name = execution_name("job_1", "ingest", {"doc": "a"}, MADE)
    assert name == execution_name("job_1", "ingest", {"doc": "a"}, MADE)
    assert re.fullmatch(r"ingest-[0-9a-f]{32}", name)
    others = {
        execution_name("job_2", "ingest", {"doc": "a"}, MADE),
        execution_name("job_1", "consolidate", {"doc": "a"}, MADE),
        execution_name("job_1", "ingest", {"doc": "b"}, MADE),
        execution_name("job_1", "ingest", {"doc": "a"}, MADE + timedelta(microseconds=1)),  # made again
    }
    assert name not in others and len(others) == 4


def test_execution_names_stay_within_step_functions_limits_for_any_kind() -> None:
    name = execution_name("job_1", "weird kind/with spaces:" + "x" * 300, {}, MADE)
    assert len(name) <= 80 and re.fullmatch(r"[A-Za-z0-9_-]+", name)
    assert re.fullmatch(r"job-[0-9a-f]{32}", execution_name("job_1", "///", {}, MADE))


def test_a_key_always_maps_to_the_same_job_id() -> None:
    assert job_id_for_key("k-1") == job_id_for_key("k-1") != job_id_for_key("k-2")
    assert re.fullmatch(r"job_[0-9a-f]{26}", job_id_for_key("k-1"))


def test_execution_arns_derive_from_the_state_machine_arn() -> None:
    assert execution_arn(MACHINE, "n") == "arn:aws:states:us-east-1:123456789012:execution:cairn-job:n"
    with pytest.raises(ValueError):
        execution_arn("arn:aws:lambda:us-east-1:1:function:f", "n")


# -- start ---------------------------------------------------------------------------------------


def test_start_writes_the_record_before_starting_the_execution(
    runner: StepFunctionsJobRunner, sfn: FakeSfn, records: MemoryRecordStore
) -> None:
    job = runner.start("echo", {"text": "hi"}, brain_id="brn_1", principal="alice")

    assert sfn.stored_at_start == [True]
    (call,) = sfn.calls
    assert call["stateMachineArn"] == MACHINE
    assert json.loads(call["input"]) == {"job_id": job.id, "kind": "echo"}
    assert call["name"] == execution_name(job.id, "echo", {"text": "hi"}, job.created_at)
    item = records.get(f"job#{job.id}", "job")
    assert item is not None and item.data["status"] == "queued"
    assert item.data["execution_arn"] == execution_arn(MACHINE, call["name"])
    assert (job.status, job.attempts, job.brain_id, job.principal) == (JobStatus.queued, 0, "brn_1", "alice")


def test_a_kind_with_its_own_machine_starts_there_and_others_use_the_generic_one(
    runner: StepFunctionsJobRunner, sfn: FakeSfn
) -> None:
    runner.start("ingest", {})
    runner.start("consolidate", {})
    assert [c["stateMachineArn"] for c in sfn.calls] == [INGEST, MACHINE]


def test_without_any_machine_start_refuses(
    records: MemoryRecordStore, sfn: FakeSfn, clock: FakeClock
) -> None:
    lonely = StepFunctionsJobRunner(sfn, records, clock, {"ingest": INGEST})
    with pytest.raises(CairnError, match="no state machine"):
        lonely.start("other", {})


def test_a_repeated_key_returns_the_first_job_and_starts_nothing_more(
    runner: StepFunctionsJobRunner, sfn: FakeSfn
) -> None:
    first = runner.start("once", {"n": 1}, idempotency_key="k")
    again = runner.start("once", {"n": 2}, idempotency_key="k")
    assert again.id == first.id == job_id_for_key("k") and again.input == {"n": 1}
    # the job never ran, so the repeat re-sends the same StartExecution, which Step Functions dedupes
    assert len(sfn.calls) == 2 and sfn.calls[0] == sfn.calls[1] and len(sfn.executions) == 1
    with pytest.raises(Conflict):
        runner.start("other-kind", {}, idempotency_key="k")


def test_an_execution_that_already_exists_counts_as_started(
    runner: StepFunctionsJobRunner, sfn: FakeSfn
) -> None:
    job = runner.start("once", {}, idempotency_key="k")
    sfn.end(next(iter(sfn.executions)), "SUCCEEDED")
    assert runner.start("once", {}, idempotency_key="k").id == job.id  # ExecutionAlreadyExists


def test_a_refused_start_raises_and_a_retry_with_the_key_starts_the_same_execution(
    runner: StepFunctionsJobRunner, sfn: FakeSfn
) -> None:
    sfn.refuse = "ExecutionLimitExceeded"
    with pytest.raises(JobNotStarted, match="ExecutionLimitExceeded"):
        runner.start("echo", {}, idempotency_key="k")
    assert runner.status(job_id_for_key("k")).status is JobStatus.queued

    sfn.refuse = None
    job = runner.start("echo", {}, idempotency_key="k")
    assert job.id == job_id_for_key("k") and len(sfn.executions) == 1
    assert sfn.calls[0] == sfn.calls[1]


@pytest.mark.parametrize("payload", [["a"], {"x": {1}}, {"x": float("inf")}])
def test_a_payload_that_is_not_a_json_object_is_refused(
    runner: StepFunctionsJobRunner, sfn: FakeSfn, payload: Any
) -> None:
    with pytest.raises(InvalidInput):
        runner.start("echo", payload)
    assert sfn.calls == []


# -- execute and fail: the task side -------------------------------------------------------------


def test_execute_runs_the_handler_and_records_each_transition(runner: StepFunctionsJobRunner) -> None:
    seen: list[tuple[JobStatus, int]] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        current = runner.status(job.id)
        seen.append((current.status, current.attempts))
        return {"done": True}

    runner.register("echo", handle)
    job = runner.start("echo", {})
    assert runner.execute(job.id) == {"job_id": job.id, "status": "completed", "error": None}

    done = runner.status(job.id)
    assert seen == [(JobStatus.running, 1)]
    assert (done.status, done.result, done.progress, done.attempts) == (
        JobStatus.completed,
        {"done": True},
        1.0,
        1,
    )
    assert done.updated_at > job.updated_at and done.created_at == job.created_at


def test_a_failed_attempt_is_recorded_then_raised_for_the_state_machine_to_retry(
    runner: StepFunctionsJobRunner,
) -> None:
    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if job.attempts == 1:
            raise ValueError("boom\nsecret traceback line")
        return {}

    runner.register("flaky", handle)
    job = runner.start("flaky", {})
    with pytest.raises(JobAttemptFailed) as raised:
        runner.execute(job.id)
    assert str(raised.value) == "ValueError: boom" and raised.value.__cause__ is None
    between = runner.status(job.id)
    assert (between.status, between.attempts, between.error) == (JobStatus.queued, 1, "ValueError: boom")

    assert runner.execute(job.id)["status"] == "completed"
    done = runner.status(job.id)
    assert (done.status, done.attempts, done.error) == (JobStatus.completed, 2, None)


def test_fail_marks_an_unfinished_job_failed_and_leaves_a_finished_one(
    runner: StepFunctionsJobRunner,
) -> None:
    runner.register("echo", lambda job, ctx: {})
    open_job, done_job = runner.start("echo", {}), runner.start("echo", {})
    runner.execute(done_job.id)

    caught = {"Error": "States.Timeout", "Cause": "took too long"}
    assert runner.fail(open_job.id, caught)["error"] == "States.Timeout: the job's task could not run"
    assert runner.status(open_job.id).status is JobStatus.failed
    assert runner.fail(done_job.id, caught)["status"] == "completed"
    assert runner.status(done_job.id).status is JobStatus.completed


def test_a_repeated_delivery_of_a_finished_job_does_not_run_it_again(runner: StepFunctionsJobRunner) -> None:
    runs: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.attempts)
        return {}

    runner.register("echo", handle)
    job = runner.start("echo", {})
    runner.execute(job.id)
    assert runner.execute(job.id)["status"] == "completed"
    assert runs == [1] and runner.status(job.id).attempts == 1


def test_permanent_failures_fail_the_job_without_raising(runner: StepFunctionsJobRunner) -> None:
    runner.register("odd", lambda job, ctx: ["not", "an", "object"])  # type: ignore[arg-type, return-value]
    unknown, odd = runner.start("nobody", {}), runner.start("odd", {})

    assert runner.execute(unknown.id)["status"] == "failed"
    assert runner.execute(odd.id)["status"] == "failed"
    assert "nobody" in (runner.status(unknown.id).error or "")
    assert "JSON object" in (runner.status(odd.id).error or "")
    assert runner.execute("job_missing") == {
        "job_id": "job_missing",
        "status": "failed",
        "error": "job 'job_missing' not found",
    }


def test_checkpoints_are_items_of_the_job_partition(
    runner: StepFunctionsJobRunner, records: MemoryRecordStore
) -> None:
    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.checkpoint("chunked", {"n": 3})
        return {"seen": ctx.checkpoints()}

    runner.register("steps", handle)
    job = runner.start("steps", {})
    runner.execute(job.id)
    assert [item.sk for item in records.query(f"job#{job.id}").items] == ["checkpoint#chunked", "job"]
    assert runner.status(job.id).result == {"seen": {"chunked": {"n": 3}}}


def test_an_attempt_that_was_superseded_can_no_longer_write(runner: StepFunctionsJobRunner) -> None:
    # Given attempt 1 is still running when the state machine starts attempt 2 (a task timeout)
    stale: list[JobContext] = []
    refused: list[str] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if job.attempts == 1:
            stale.append(ctx)
            runner.execute(job.id)  # attempt 2 runs to completion meanwhile
            for write in (lambda: ctx.progress(0.9), lambda: ctx.checkpoint("late")):
                try:
                    write()
                except Conflict:
                    refused.append("refused")
            return {"by": 1}
        return {"by": job.attempts}

    runner.register("stall", handle)
    job = runner.start("stall", {})
    # Then attempt 1 cannot write, nor overwrite attempt 2's result
    with pytest.raises(JobAttemptFailed, match="no longer owns"):
        runner.execute(job.id)
    done = runner.status(job.id)
    assert refused == ["refused", "refused"]
    assert (done.status, done.attempts, done.result) == (JobStatus.completed, 2, {"by": 2})


# -- status --------------------------------------------------------------------------------------


@pytest.mark.parametrize("ended", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_status_marks_a_job_failed_when_its_execution_ended_without_it(
    runner: StepFunctionsJobRunner, sfn: FakeSfn, ended: str
) -> None:
    job = runner.start("echo", {})
    sfn.end(next(iter(sfn.executions)), ended, error="States.Timeout")
    failed = runner.status(job.id)
    assert failed.status is JobStatus.failed
    assert failed.error == f"the job's execution ended {ended}: States.Timeout"


def test_status_trusts_the_record_while_the_execution_runs_or_cannot_be_asked(
    runner: StepFunctionsJobRunner, sfn: FakeSfn
) -> None:
    job = runner.start("echo", {})
    assert runner.status(job.id).status is JobStatus.queued

    def broken(**kwargs: Any) -> dict[str, Any]:
        raise client_error("ThrottlingException", "DescribeExecution")

    sfn.describe_execution = broken  # type: ignore[method-assign]
    assert runner.status(job.id).status is JobStatus.queued


def test_a_job_whose_execution_never_started_fails_after_the_grace_period(
    runner: StepFunctionsJobRunner, sfn: FakeSfn, clock: FakeClock
) -> None:
    sfn.refuse = "ServiceUnavailable"
    with pytest.raises(JobNotStarted):
        runner.start("echo", {}, idempotency_key="k")
    job_id = job_id_for_key("k")
    assert runner.status(job_id).status is JobStatus.queued  # StartExecution may still be on its way

    clock.advance(runner.start_grace_s + 1)
    failed = runner.status(job_id)
    assert (failed.status, failed.error) == (JobStatus.failed, "the job's execution was never started")


@pytest.mark.parametrize("job_id", ["job_unknown", "", "x" * 5000])
def test_status_of_an_unknown_job_is_not_found(runner: StepFunctionsJobRunner, job_id: str) -> None:
    with pytest.raises(NotFound):
        runner.status(job_id)


# -- the task dispatcher and error texts ---------------------------------------------------------


def test_the_task_handler_dispatches_execute_and_fail(runner: StepFunctionsJobRunner) -> None:
    runner.register("echo", lambda job, ctx: {})
    handle = task_handler(runner)
    one, two = runner.start("echo", {}), runner.start("echo", {})

    assert handle({"action": "execute", "job_id": one.id}, None)["status"] == "completed"
    failed = handle({"action": "fail", "job_id": two.id, "error": {"Error": "X"}}, None)
    assert failed == {"job_id": two.id, "status": "failed", "error": "X: the job's task could not run"}
    with pytest.raises(InvalidInput):
        handle({"action": "explode", "job_id": one.id}, None)


@pytest.mark.parametrize(
    ("caught", "text"),
    [
        (
            {
                "Error": "JobAttemptFailed",
                "Cause": json.dumps({"errorType": "JobAttemptFailed", "errorMessage": "E: m"}),
            },
            "E: m",
        ),
        (
            {
                "Error": "Sandbox.Timedout",
                "Cause": json.dumps(
                    {"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out\nmore"}
                ),
            },
            "Sandbox.Timedout: Task timed out",
        ),
        (
            {"Error": "Lambda.ServiceException", "Cause": "Internal (Service: AWSLambda; Request ID: r-1)"},
            "Lambda.ServiceException: the job's task could not run",
        ),
        ("plain text\nsecond line", "plain text"),
        (None, "the job failed"),
    ],
)
def test_failure_text_is_one_line_without_service_chatter(caught: Any, text: str) -> None:
    assert failure_text(caught) == text
