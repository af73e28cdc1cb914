"""JobRunner contract: every runner (in-memory fake, SQLite queue) passes these."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.job_engine import JobEngine
from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.domain.errors import Conflict, InvalidInput, NotFound, Unavailable
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobRunner
from tests.support.sfn_runner import sfn_jobs_for_contract

LEASE_S = 60.0
has_message = pytest.mark.skipif(
    "message" not in Job.model_fields, reason="domain Job has no message field yet"
)


class Crash(BaseException):
    """Stands in for the process dying mid-handler: not an Exception, so nothing handles it."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


ENGINE_ONLY = {
    # Leases, a worker thread and a dying process are how the embedded engine runs jobs; on Step
    # Functions the service owns those (tests/integration/aws/test_job_state_machine.py).
    "test_a_job_abandoned_mid_run_is_taken_again_once_its_lease_expires",
    "test_an_attempt_that_lost_its_lease_cannot_overwrite_the_new_owner",
    "test_a_job_whose_workers_keep_dying_fails_after_max_attempts",
    "test_worker_runs_started_jobs_in_the_background_and_stops_cleanly",
}


@pytest.fixture(params=["memory", "sqlite", "stepfunctions"])
def runner(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[JobEngine]:
    engine: JobEngine
    if request.param == "stepfunctions":
        if request.node.originalname in ENGINE_ONLY:
            pytest.skip("embedded engine only: Step Functions owns leases, workers and retries")
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            request.getfixturevalue("monkeypatch").setenv(key, "testing")
        with sfn_jobs_for_contract(request) as sfn:
            yield sfn  # type: ignore[misc]  # a JobRunner, though not a JobEngine
        return
    if request.param == "memory":
        engine = MemoryJobRunner(clock, lease_s=LEASE_S, max_attempts=3)
    else:
        engine = SqliteJobRunner(tmp_path / "jobs.sqlite3", clock, lease_s=LEASE_S, max_attempts=3)
    yield engine
    engine.close()


def steps_handler(effects: Counter[str], *, fail_on: Callable[[Job, JobContext], bool]) -> Any:
    """Two idempotent steps; each side effect counts once per actual execution."""

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        for step in ("one", "two"):
            if step not in ctx.checkpoints():
                effects[step] += 1
                ctx.checkpoint(step, f"{step}-done")
            if step == "one" and fail_on(job, ctx):
                raise RuntimeError("flaky after step one")
        return {"steps": ctx.checkpoints()}

    return handle


def test_started_job_runs_to_completion_with_its_result(runner: JobEngine) -> None:
    runner.register("echo", lambda job, ctx: {"echo": job.input["text"], "brain": job.brain_id})
    job = runner.start("echo", {"text": "hi"}, brain_id="brn_1", principal="alice")
    assert (job.status, job.attempts, job.progress) == (JobStatus.queued, 0, 0.0)

    assert runner.run_pending() == 1

    done = runner.status(job.id)
    assert done.status is JobStatus.completed
    assert done.result == {"echo": "hi", "brain": "brn_1"}
    assert (done.attempts, done.progress, done.error) == (1, 1.0, None)
    assert (done.kind, done.input, done.principal) == ("echo", {"text": "hi"}, "alice")
    assert done.created_at == job.created_at and done.updated_at > job.updated_at
    assert runner.run_pending() == 0


def test_progress_is_visible_through_status_while_running(runner: JobEngine) -> None:
    seen: list[Job] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.progress(0.25, "quarter")
        seen.append(runner.status(job.id))
        ctx.progress(7.0)  # clamped
        seen.append(runner.status(job.id))
        return {}

    runner.register("slow", handle)
    job = runner.start("slow", {})
    runner.run_pending()
    assert [(j.status, j.progress) for j in seen] == [(JobStatus.running, 0.25), (JobStatus.running, 1.0)]
    assert runner.status(job.id).status is JobStatus.completed


@has_message
def test_progress_message_is_visible_through_status(runner: JobEngine) -> None:
    seen: list[Any] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.progress(0.5, "halfway")
        seen.append(getattr(runner.status(job.id), "message", None))
        return {}

    runner.register("slow", handle)
    runner.start("slow", {})
    runner.run_pending()
    assert seen == ["halfway"]


def test_failing_job_is_retried_then_fails_with_a_one_line_error(runner: JobEngine) -> None:
    calls: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        calls.append(job.attempts)
        raise ValueError("bad input\n  File secret.py, line 3")

    runner.register("bad", handle)
    job = runner.start("bad", {})
    assert runner.run_pending() == 3

    failed = runner.status(job.id)
    assert calls == [1, 2, 3]
    assert (failed.status, failed.attempts, failed.result) == (JobStatus.failed, 3, None)
    assert failed.error == "ValueError: bad input"


def test_a_transient_failure_is_retried_to_success(runner: JobEngine) -> None:
    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if job.attempts == 1:
            raise Unavailable("not yet")
        return {"ok": True}

    runner.register("flaky", handle)
    job = runner.start("flaky", {})
    runner.run_pending()
    done = runner.status(job.id)
    assert (done.status, done.attempts, done.result, done.error) == (
        JobStatus.completed,
        2,
        {"ok": True},
        None,
    )


@pytest.mark.parametrize("refusal", [InvalidInput("the file is not a PNG"), NotFound("no such brain")])
def test_a_refused_input_fails_at_once_without_a_traceback(
    runner: JobEngine, refusal: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        calls.append(job.attempts)
        raise refusal

    runner.register("refused", handle)
    job = runner.start("refused", {})
    with caplog.at_level(logging.WARNING):
        runner.run_pending()

    failed = runner.status(job.id)
    assert calls == [1] and (failed.status, failed.attempts) == (JobStatus.failed, 1)
    assert failed.error == str(refusal)
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text


def test_same_idempotency_key_gives_the_same_job_and_one_run(runner: JobEngine) -> None:
    effects: Counter[str] = Counter()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        effects["ran"] += 1
        return {"n": job.input["n"]}

    runner.register("once", handle)

    first = runner.start("once", {"n": 1}, idempotency_key="k-1")
    again = runner.start("once", {"n": 2}, idempotency_key="k-1")
    other = runner.start("once", {"n": 3}, idempotency_key="k-2")
    runner.run_pending()
    after = runner.start("once", {"n": 4}, idempotency_key="k-1")

    assert first.id == again.id == after.id != other.id
    assert after.status is JobStatus.completed and after.result == {"n": 1}
    assert effects["ran"] == 2
    with pytest.raises(Conflict):
        runner.start("another-kind", {}, idempotency_key="k-1")


def test_checkpoints_survive_a_retry_so_finished_steps_are_not_redone(runner: JobEngine) -> None:
    effects: Counter[str] = Counter()
    runner.register("steps", steps_handler(effects, fail_on=lambda job, ctx: job.attempts == 1))
    job = runner.start("steps", {})
    runner.run_pending()

    done = runner.status(job.id)
    assert (done.status, done.attempts) == (JobStatus.completed, 2)
    assert done.result == {"steps": {"one": "one-done", "two": "two-done"}}
    assert effects == Counter({"one": 1, "two": 1})


def test_unknown_kind_fails_with_a_clear_error(runner: JobEngine) -> None:
    job = runner.start("nobody-handles-this", {"x": 1})
    assert runner.run_pending() == 1
    failed = runner.status(job.id)
    assert failed.status is JobStatus.failed and failed.attempts == 1
    assert failed.error is not None and "nobody-handles-this" in failed.error


def test_status_of_an_unknown_id_is_not_found(runner: JobEngine) -> None:
    with pytest.raises(NotFound):
        runner.status("job_doesnotexist")


@pytest.mark.parametrize("payload", [["not", "an", "object"], {"x": {1, 2}}, {"x": float("nan")}])
def test_payload_must_be_a_json_object(runner: JobEngine, payload: Any) -> None:
    with pytest.raises(InvalidInput):
        runner.start("echo", payload)


def test_a_result_that_is_not_a_json_object_fails_the_job(runner: JobEngine) -> None:
    runner.register("odd", lambda job, ctx: ["a", "list"])  # type: ignore[arg-type, return-value]
    job = runner.start("odd", {})
    runner.run_pending()
    failed = runner.status(job.id)
    assert failed.status is JobStatus.failed and "JSON object" in (failed.error or "")


def test_a_job_abandoned_mid_run_is_taken_again_once_its_lease_expires(
    runner: JobEngine, clock: FakeClock
) -> None:
    effects: Counter[str] = Counter()

    def crash_first(job: Job, ctx: JobContext) -> bool:
        if job.attempts == 1:
            raise Crash
        return False

    runner.register("steps", steps_handler(effects, fail_on=crash_first))
    job = runner.start("steps", {})
    with pytest.raises(Crash):
        runner.run_pending()
    assert runner.status(job.id).status is JobStatus.running

    assert runner.run_pending() == 0  # the lease still holds: nobody else may take it
    clock.advance(LEASE_S + 1)
    assert runner.run_pending() == 1

    assert runner.status(job.id).status is JobStatus.completed
    assert effects == Counter({"one": 1, "two": 1})


def test_an_attempt_that_lost_its_lease_cannot_overwrite_the_new_owner(
    runner: JobEngine, clock: FakeClock
) -> None:
    # Given attempt 1 stalls past its lease, and attempt 2 (another worker) takes the job over
    stale: list[JobContext] = []
    outcomes: list[str] = []

    def try_stale_write(when: str) -> None:
        try:
            stale[0].checkpoint("stale", when)
        except Conflict:
            outcomes.append(f"stale write refused {when}")

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if job.attempts == 1:
            stale.append(ctx)
            clock.advance(LEASE_S + 1)
            runner.run_pending()  # the "other worker" runs attempt 2 to completion
            try_stale_write("after attempt 2 finished")
            return {"by_attempt": 1}
        ctx.progress(0.5)
        try_stale_write("while attempt 2 runs")
        return {"by_attempt": job.attempts, "checkpoints": ctx.checkpoints()}

    runner.register("stall", handle)
    job = runner.start("stall", {})
    runner.run_pending()

    # Then every stale write was refused, and the job keeps attempt 2's result
    done = runner.status(job.id)
    assert outcomes == [
        "stale write refused while attempt 2 runs",
        "stale write refused after attempt 2 finished",
    ]
    assert (done.status, done.attempts) == (JobStatus.completed, 2)
    assert done.result == {"by_attempt": 2, "checkpoints": {}}


def test_a_job_whose_workers_keep_dying_fails_after_max_attempts(runner: JobEngine, clock: FakeClock) -> None:
    def always_crash(job: Job, ctx: JobContext) -> dict[str, Any]:
        raise Crash

    runner.register("doomed", always_crash)
    job = runner.start("doomed", {})
    for _ in range(3):
        with pytest.raises(Crash):
            runner.run_pending()
        clock.advance(LEASE_S + 1)
    assert runner.run_pending() == 1

    failed = runner.status(job.id)
    assert failed.status is JobStatus.failed
    assert failed.error is not None and "gave up after 3 attempts" in failed.error


def test_worker_runs_started_jobs_in_the_background_and_stops_cleanly(runner: JobEngine) -> None:
    threads: list[str] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"ok": 1}

    runner.register("bg", handle)
    runner.poll_s = 60.0  # only start()'s wake-up can get the job picked up within the wait below
    runner.start_worker()
    runner.start_worker()  # idempotent
    try:
        job = runner.start("bg", {})
        done = wait_for(lambda: runner.status(job.id), lambda j: j.status is JobStatus.completed)
        assert done.result == {"ok": 1}
        assert len(threads) == 1 and threads[0].startswith("cairn-jobs-")
        assert len(worker_threads()) == runner.workers == 2
    finally:
        runner.stop_worker()
    assert worker_threads() == []
    runner.stop_worker()  # idempotent


def worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("cairn-jobs-")]


def wait_for(read: Callable[[], Job], done: Callable[[Job], bool], timeout_s: float = 10.0) -> Job:
    deadline = time.monotonic() + timeout_s
    while True:
        current = read()
        if done(current):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"job did not finish in time: {current!r}")
        time.sleep(0.01)


def test_forget_deletes_the_finished_jobs_holds_picks_with_their_checkpoints(runner: JobEngine) -> None:
    effects: Counter[str] = Counter()
    forgotten_while_running: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if "said" not in ctx.checkpoints():
            effects[job.input["text"]] += 1
            ctx.checkpoint("said", job.input["text"])
        if job.input.get("forget_me"):
            forgotten_while_running.append(runner.forget([job.id]))
        return {"said": ctx.checkpoints()["said"]}

    runner.register("note", handle)
    alice = runner.start("note", {"text": "alice sails"}, brain_id="brn_1", idempotency_key="k-alice")
    bob = runner.start("note", {"text": "bob rows"}, brain_id="brn_1")
    busy = runner.start("note", {"text": "alice rests", "forget_me": True}, brain_id="brn_1")
    runner.run_pending()
    assert forgotten_while_running == [0]  # a running job keeps what it needs

    def names_alice(held: dict[str, Any]) -> bool:
        return "alice" in json.dumps(held)

    assert runner.forget([alice.id, bob.id, "job_unknown", alice.id], names_alice) == 1
    with pytest.raises(NotFound):
        runner.status(alice.id)
    assert runner.status(bob.id).result == {"said": "bob rows"}
    assert runner.status(busy.id).status is JobStatus.completed

    again = runner.start("note", {"text": "alice sails"}, brain_id="brn_1", idempotency_key="k-alice")
    assert again.status is JobStatus.queued  # the key starts a new job: the old one is gone
    runner.run_pending()
    assert effects["alice sails"] == 2  # its checkpoint went with it, so the step ran again
    assert runner.forget([bob.id, busy.id, again.id]) == 3  # without holds: every finished one


def test_a_forgotten_jobs_text_is_left_nowhere_in_the_sqlite_files(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "jobs.sqlite3"
    runner = SqliteJobRunner(path, clock)
    secret = "zqx-" + "alice's long health note " * 200  # over a page: its text lies on overflow pages

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        for n in range(3):  # each report rewrites the row, leaving older copies in freed space
            ctx.checkpoint(f"step{n}", job.input["text"])
            ctx.progress(n / 3, "working")
        return {"text": job.input["text"]}

    runner.register("note", handle)
    job = runner.start("note", {"text": secret}, brain_id="brn_1")
    runner.run_pending()
    files = [p for p in tmp_path.iterdir() if p.name.startswith("jobs.sqlite3")]
    assert any(b"zqx-" in p.read_bytes() for p in files)

    assert runner.forget([job.id]) == 1
    assert [p.name for p in tmp_path.iterdir() if b"zqx-" in p.read_bytes()] == []
    runner.close()


def test_run_one_runs_that_job_only(runner: JobEngine) -> None:
    ran: list[str] = []
    runner.register("work", lambda job, ctx: ran.append(job.input["name"]) or {})
    other = runner.start("work", {"name": "another principal's"}, principal="alice")
    mine = runner.start("work", {"name": "mine"}, principal="bob")
    if isinstance(runner, JobEngine):  # the embedded runner: it runs it here, once
        assert runner.run_one(mine.id) is True and ran == ["mine"]
        assert runner.status(mine.id).status is JobStatus.completed
        assert runner.status(other.id).status is JobStatus.queued
        assert runner.run_one(mine.id) is False  # done: nothing to run
    else:  # Step Functions runs every job from its start: nothing to run here
        assert runner.run_one(mine.id) is False
    runner.run_pending()
    assert sorted(ran) == ["another principal's", "mine"]
