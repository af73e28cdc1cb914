"""infra/statemachines/job.asl.json executed by moto, its Lambda tasks routed in-process to the
real task handler: the ASL's Retry and Catch paths and the StepFunctionsJobRunner together."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
from cairn.adapters.aws.sfn_tasks import task_handler
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext
from tests.contract.aws_storage import fake_credentials
from tests.fakes.clock import FakeClock
from tests.support.moto_lambda import LambdaServiceError, route_lambda
from tests.support.sfn_runner import TASK_FUNCTION, MotoJobs, job_definition, moto_job_runner


def task_failed_retrier() -> dict[str, Any]:
    (retrier,) = [
        r
        for r in json.loads(job_definition())["States"]["RunJob"]["Retry"]
        if r["ErrorEquals"] == ["States.TaskFailed"]
    ]
    return retrier


class Crash(BaseException):
    """The task process dying mid-handler: not an Exception, so the runner cannot record it."""


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_credentials(monkeypatch)


@pytest.fixture(params=["memory", "dynamodb"])
def jobs(request: pytest.FixtureRequest) -> Iterator[MotoJobs]:
    with moto_job_runner(FakeClock(), request.param, run_timeout_s=20) as ready:
        yield ready


def executions(jobs: MotoJobs, arn: str | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = jobs.sfn.list_executions(stateMachineArn=arn or jobs.state_machine_arn)[
        "executions"
    ]
    return found


def describe_only_execution(jobs: MotoJobs) -> dict[str, Any]:
    (execution,) = executions(jobs)
    described: dict[str, Any] = jobs.sfn.describe_execution(executionArn=execution["executionArn"])
    return described


def actions(jobs: MotoJobs) -> list[str]:
    return [call.event["action"] for call in jobs.invocations]


def test_a_job_completes_with_its_result(jobs: MotoJobs) -> None:
    jobs.runner.register("echo", lambda job, ctx: {"echo": job.input["text"], "brain": job.brain_id})

    job = jobs.runner.start("echo", {"text": "hi"}, brain_id="brn_1", principal="alice")
    assert (job.status, job.attempts) == (JobStatus.queued, 0)
    assert jobs.runner.run_pending() == 1

    done = jobs.runner.status(job.id)
    assert (done.status, done.result, done.attempts, done.progress, done.error) == (
        JobStatus.completed,
        {"echo": "hi", "brain": "brn_1"},
        1,
        1.0,
        None,
    )
    execution = describe_only_execution(jobs)
    assert execution["status"] == "SUCCEEDED"
    assert actions(jobs) == ["execute"]
    assert jobs.invocations[0].event == {"action": "execute", "job_id": job.id}


def test_progress_and_message_are_visible_while_the_task_runs(jobs: MotoJobs) -> None:
    seen: list[tuple[JobStatus, float, str | None]] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.progress(0.25, "a quarter")
        current = jobs.runner.status(job.id)
        seen.append((current.status, current.progress, current.message))
        return {}

    jobs.runner.register("slow", handle)
    job = jobs.runner.start("slow", {})
    jobs.runner.run_pending()

    assert seen == [(JobStatus.running, 0.25, "a quarter")]
    assert jobs.runner.status(job.id).status is JobStatus.completed


def test_a_handler_failing_once_is_retried_by_the_state_machine_and_completes(jobs: MotoJobs) -> None:
    effects: Counter[str] = Counter()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if "one" not in ctx.checkpoints():
            effects["one"] += 1
            ctx.checkpoint("one", "done")
        if job.attempts == 1:
            raise RuntimeError("flaky after step one")
        return {"steps": ctx.checkpoints()}

    jobs.runner.register("flaky", handle)
    job = jobs.runner.start("flaky", {})
    assert jobs.runner.run_pending() == 2

    done = jobs.runner.status(job.id)
    assert (done.status, done.attempts, done.error) == (JobStatus.completed, 2, None)
    assert done.result == {"steps": {"one": "done"}}
    assert effects == Counter({"one": 1})  # the checkpoint survived the retry
    assert actions(jobs) == ["execute", "execute"]
    # one backoff wait was asked for, jittered within the retrier's first interval
    assert len(jobs.waits) == 1 and 0 <= jobs.waits[0] <= task_failed_retrier()["IntervalSeconds"]
    assert describe_only_execution(jobs)["status"] == "SUCCEEDED"


def test_a_handler_that_always_fails_lands_in_catch_and_the_job_fails(jobs: MotoJobs) -> None:
    attempts: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        attempts.append(job.attempts)
        raise ValueError("bad input\n  File secret.py, line 3")

    jobs.runner.register("bad", handle)
    job = jobs.runner.start("bad", {})
    assert jobs.runner.run_pending() == 3

    failed = jobs.runner.status(job.id)
    assert attempts == [1, 2, 3]
    assert (failed.status, failed.attempts, failed.result) == (JobStatus.failed, 3, None)
    assert failed.error == "ValueError: bad input"
    assert actions(jobs) == ["execute", "execute", "execute", "fail"]
    execution = describe_only_execution(jobs)
    assert (execution["status"], execution["error"], execution["cause"]) == (
        "FAILED",
        "Cairn.JobFailed",
        "ValueError: bad input",
    )
    assert "secret.py" not in str(jobs.sfn.get_execution_history(executionArn=execution["executionArn"]))


def test_a_task_process_that_dies_is_retried_and_keeps_its_checkpoints(jobs: MotoJobs) -> None:
    effects: Counter[str] = Counter()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        for step in ("one", "two"):
            if step not in ctx.checkpoints():
                effects[step] += 1
                ctx.checkpoint(step)
            if step == "one" and job.attempts == 1:
                raise Crash
        return {"attempt": job.attempts}

    jobs.runner.register("steps", handle)
    job = jobs.runner.start("steps", {})
    jobs.runner.run_pending()

    done = jobs.runner.status(job.id)
    assert (done.status, done.attempts, done.result) == (JobStatus.completed, 2, {"attempt": 2})
    assert effects == Counter({"one": 1, "two": 1})


def test_a_task_process_that_keeps_dying_fails_the_job_with_the_runtime_error(jobs: MotoJobs) -> None:
    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        raise Crash

    jobs.runner.register("doomed", handle)
    job = jobs.runner.start("doomed", {})
    jobs.runner.run_pending()

    failed = jobs.runner.status(job.id)
    assert (failed.status, failed.attempts) == (JobStatus.failed, 3)
    assert failed.error == "Runtime.ExitError: Runtime exited with error: exit status 1"


def test_lambda_throttling_is_retried_without_counting_attempts(jobs: MotoJobs) -> None:
    jobs.runner.register("echo", lambda job, ctx: {"ok": True})
    task = task_handler(jobs.runner)
    throttled: list[str] = []

    def throttled_twice(event: dict[str, Any], context: Any) -> Any:
        if len(throttled) < 2:
            throttled.append(event["action"])
            raise LambdaServiceError("TooManyRequestsException", 429, "Rate exceeded")
        return task(event, context)

    with route_lambda({TASK_FUNCTION: throttled_twice}):
        job = jobs.runner.start("echo", {})
        jobs.runner.run_pending()

    done = jobs.runner.status(job.id)
    assert (done.status, done.attempts) == (JobStatus.completed, 1)
    assert len(jobs.waits) == 2  # a backoff before each retried invoke


def test_lambda_throttling_that_outlasts_the_retries_fails_the_job(jobs: MotoJobs) -> None:
    jobs.runner.register("echo", lambda job, ctx: {"ok": True})
    task = task_handler(jobs.runner)

    def throttled_execute(event: dict[str, Any], context: Any) -> Any:
        if event["action"] == "execute":
            raise LambdaServiceError("TooManyRequestsException", 429, "Rate exceeded")
        return task(event, context)

    with route_lambda({TASK_FUNCTION: throttled_execute}) as calls:
        job = jobs.runner.start("echo", {})
        jobs.runner.run_pending()

    failed = jobs.runner.status(job.id)
    assert (failed.status, failed.attempts) == (JobStatus.failed, 0)
    assert failed.error == "Lambda.TooManyRequestsException: the job's task could not run"
    assert [call.event["action"] for call in calls] == ["execute"] * 7 + ["fail"]  # MaxAttempts 6


def test_the_same_idempotency_key_starts_one_execution(jobs: MotoJobs) -> None:
    ran: Counter[str] = Counter()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ran["once"] += 1
        return {"n": job.input["n"]}

    jobs.runner.register("once", handle)
    first = jobs.runner.start("once", {"n": 1}, idempotency_key="k-1")
    again = jobs.runner.start("once", {"n": 2}, idempotency_key="k-1")
    jobs.runner.run_pending()
    after = jobs.runner.start("once", {"n": 3}, idempotency_key="k-1")

    assert first.id == again.id == after.id
    assert (after.status, after.result) == (JobStatus.completed, {"n": 1})
    assert ran["once"] == 1 and len(executions(jobs)) == 1
    with pytest.raises(Conflict):
        jobs.runner.start("another-kind", {}, idempotency_key="k-1")


def test_identical_payloads_without_a_key_are_separate_jobs(jobs: MotoJobs) -> None:
    jobs.runner.register("echo", lambda job, ctx: {})
    one, two = jobs.runner.start("echo", {"x": 1}), jobs.runner.start("echo", {"x": 1})
    jobs.runner.run_pending()
    assert one.id != two.id and len(executions(jobs)) == 2


def test_an_unknown_kind_fails_at_once_without_retries(jobs: MotoJobs) -> None:
    job = jobs.runner.start("nobody-handles-this", {})
    assert jobs.runner.run_pending() == 1
    failed = jobs.runner.status(job.id)
    assert failed.status is JobStatus.failed and "nobody-handles-this" in (failed.error or "")
    assert actions(jobs) == ["execute"] and jobs.waits == []
    assert describe_only_execution(jobs)["status"] == "FAILED"


def test_status_of_an_unknown_id_is_not_found(jobs: MotoJobs) -> None:
    with pytest.raises(NotFound):
        jobs.runner.status("job_doesnotexist")


@pytest.mark.parametrize("payload", [["not", "an", "object"], {"x": float("nan")}])
def test_a_bad_payload_is_refused_and_starts_nothing(jobs: MotoJobs, payload: Any) -> None:
    with pytest.raises(InvalidInput):
        jobs.runner.start("echo", payload)
    assert executions(jobs) == []


def test_a_kind_with_its_own_state_machine_runs_there(jobs: MotoJobs) -> None:
    task_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{TASK_FUNCTION}"  # as SAM substitutes it
    own = jobs.sfn.create_state_machine(
        name="cairn-special", definition=job_definition(task_arn), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    machines = {"job": jobs.state_machine_arn, "special": own}
    runner = StepFunctionsJobRunner(jobs.sfn, jobs.records, FakeClock(), machines, run_timeout_s=20)
    runner.register("special", lambda job, ctx: {"where": "own machine"})
    with route_lambda({TASK_FUNCTION: task_handler(runner)}):
        job = runner.start("special", {})
        runner.run_pending()
    assert runner.status(job.id).result == {"where": "own machine"}
    assert len(executions(jobs, own)) == 1 and executions(jobs) == []


def test_when_marking_failed_fails_too_status_reconciles_from_the_execution(jobs: MotoJobs) -> None:
    def lambda_down(event: dict[str, Any], context: Any) -> Any:
        raise LambdaServiceError("ServiceException", 500, "Lambda is down")

    with route_lambda({TASK_FUNCTION: lambda_down}):
        job = jobs.runner.start("echo", {})
        jobs.runner.run_pending()

    assert describe_only_execution(jobs)["status"] == "FAILED"
    failed = jobs.runner.status(job.id)
    assert (failed.status, failed.attempts) == (JobStatus.failed, 0)
    assert failed.error == "the job's execution ended FAILED: Lambda.ServiceException"
