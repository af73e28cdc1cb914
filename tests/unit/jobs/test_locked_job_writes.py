"""An attempt's writes the job store refuses as unavailable (another process holds its writer lock
past the wait): a progress report is skipped and the job goes on; a checkpoint is tried again until
it goes in; neither fails the attempt. In a caller's thread such a write is given up after a lease
and made before the engine's next claim."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from cairn.adapters.local.job_engine import JobEngine
from cairn.domain.errors import NotFound, Unavailable
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobStore

Refuse = Callable[[dict[str, Any]], bool]


class LockedJobStore(MemoryJobStore):
    """The fake store, its updates refused as a held writer lock refuses them while `refuse` says so."""

    def __init__(self, refuse: Refuse) -> None:
        super().__init__()
        self.refuse = refuse
        self.refused: list[dict[str, Any]] = []

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        if self.refuse(changes):
            self.refused.append(changes)
            raise Unavailable("the job store was kept busy by another writer", retry_after_s=1)
        return super().update(job_id, attempt, now, changes)


def engine_on(store: MemoryJobStore, clock: FakeClock | None = None, **options: Any) -> JobEngine:
    return JobEngine(store, clock or FakeClock(), poll_s=0.001, **options)


def refusing(field: str, times: int) -> Refuse:
    """Refuse the first `times` updates that write `field`."""
    seen = [0]

    def refuse(changes: dict[str, Any]) -> bool:
        if field not in changes:
            return False
        seen[0] += 1
        return seen[0] <= times

    return refuse


def job_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "cairn.jobs" and r.levelno >= logging.WARNING]


def test_a_refused_progress_report_is_skipped_and_the_job_goes_on_saying_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = LockedJobStore(refusing("progress", times=2))
    engine = engine_on(store)
    runs: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.attempts)
        ctx.progress(0.25, "refused")
        ctx.progress(0.5, "refused too")
        ctx.progress(0.75, "written")
        return {"done": True}

    engine.register("work", handle)
    job = engine.start("work", {})
    with caplog.at_level(logging.WARNING, logger="cairn.jobs"):
        engine.run_pending()
    done = engine.status(job.id)
    assert (done.status, done.result, done.attempts, runs) == (JobStatus.completed, {"done": True}, 1, [1])
    assert len(store.refused) == 2 and store.rows[job.id].message == "written"
    said = job_warnings(caplog)
    assert len(said) == 1 and "progress" in said[0].getMessage() and said[0].exc_info is None


def test_a_refused_checkpoint_is_tried_again_until_it_goes_in_without_failing_the_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = LockedJobStore(refusing("checkpoints", times=3))
    engine = engine_on(store)
    runs: list[int] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.attempts)
        if "step" not in ctx.checkpoints():
            ctx.checkpoint("step", {"stored": 1})
        return {"seen": ctx.checkpoints()}

    engine.register("work", handle)
    job = engine.start("work", {})
    with caplog.at_level(logging.INFO, logger="cairn.jobs"):
        engine.run_pending()
    done = engine.status(job.id)
    assert (done.status, done.attempts, runs) == (JobStatus.completed, 1, [1])
    assert done.result == {"seen": {"step": {"stored": 1}}}
    assert store.rows[job.id].checkpoints == {"step": {"stored": 1}} and len(store.refused) == 3
    said = job_warnings(caplog)
    assert len(said) == 1 and "checkpoint 'step'" in said[0].getMessage() and said[0].exc_info is None
    assert any("let checkpoint 'step'" in r.getMessage() for r in caplog.records)


class StuckJobStore(LockedJobStore):
    """Its writer lock never released: every write of `field` refused, each refusal a second of the
    clock (the wait SQLite's busy timeout would spend); past `give_up` refusals it stops the test."""

    def __init__(self, field: str, clock: FakeClock, give_up: int = 200) -> None:
        super().__init__(lambda changes: field in changes)
        self.clock, self.give_up = clock, give_up

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        if self.refuse(changes):
            self.clock.advance(1.0)
            if len(self.refused) >= self.give_up:
                raise RuntimeError("still trying: the caller would wait for ever")
        return super().update(job_id, attempt, now, changes)


@pytest.mark.parametrize("run", ["run_pending", "run_one"])
def test_a_final_write_in_the_callers_thread_gives_up_after_a_lease(
    run: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    store = StuckJobStore("status", clock)
    engine = engine_on(store, clock, lease_s=10.0)
    runs: list[int] = []
    engine.register("work", lambda job, ctx: runs.append(job.attempts) or {"done": True})
    job = engine.start("work", {})
    with caplog.at_level(logging.WARNING, logger="cairn.jobs"), pytest.raises(Unavailable):
        engine.run_pending() if run == "run_pending" else engine.run_one(job.id)
    # a lease of refusals, each a second: then the caller is answered, the job left to its lease
    assert 10 <= len(store.refused) <= 12 and runs == [1]
    row = store.rows[job.id]
    assert row.status is JobStatus.running and row.result is None
    said = [r.getMessage() for r in job_warnings(caplog)]
    assert any("gave up on finishing" in m for m in said), said


def test_a_checkpoint_in_the_callers_thread_gives_up_after_a_lease_writing_no_failure() -> None:
    clock = FakeClock()
    store = StuckJobStore("checkpoints", clock)
    engine = engine_on(store, clock, lease_s=10.0)
    after: list[str] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.checkpoint("step")
        after.append("went on")
        return {}

    engine.register("work", handle)
    job = engine.start("work", {})
    with pytest.raises(Unavailable):
        engine.run_pending()
    assert 10 <= len(store.refused) <= 12 and after == []
    row = store.rows[job.id]  # no failure counted: the next claim resumes it
    assert (row.status, row.attempts, row.error, row.checkpoints) == (JobStatus.running, 1, None, {})


def test_an_outcome_given_up_in_the_callers_thread_is_written_at_the_next_claim_not_run_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The attempt did its work; only its final write met the lock. Once the store lets writes in,
    the engine's next call writes that outcome before claiming: the job is not run a second time
    (its lease had run out, so a claim would have taken it) and the attempt counts once."""
    clock = FakeClock()
    store = StuckJobStore("status", clock)
    engine = engine_on(store, clock, lease_s=10.0)
    runs: list[int] = []
    engine.register("work", lambda job, ctx: runs.append(job.attempts) or {"done": len(runs)})
    job = engine.start("work", {})
    with pytest.raises(Unavailable):
        engine.run_pending()
    assert (
        store.rows[job.id].lease_until is not None
        and store.rows[job.id].lease_until < clock.now().timestamp()
    )

    store.refuse = lambda changes: False  # the other process let go of the lock
    with caplog.at_level(logging.INFO, logger="cairn.jobs"):
        engine.run_pending()
    done = engine.status(job.id)
    assert (done.status, done.result, done.attempts, runs) == (JobStatus.completed, {"done": 1}, 1, [1])
    assert any("let finishing job" in r.getMessage() for r in caplog.records)


class LockedNowAndThen(MemoryJobStore):
    """A job store another process locks while `locked`: every claim, update and hand-back refused,
    each refusal a second of the clock (SQLite's busy wait)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock, self.locked = clock, False

    def _refused(self) -> None:
        if self.locked:
            self.clock.advance(1.0)
            raise Unavailable("the job store was kept busy by another writer", retry_after_s=1)

    def claim(self, now: datetime, lease_until: float, **options: Any) -> Any:
        self._refused()
        return super().claim(now, lease_until, **options)

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        self._refused()
        return super().update(job_id, attempt, now, changes)

    def release(self, job_id: str, attempt: int, now: datetime, ran_s: float) -> bool:
        self._refused()
        return super().release(job_id, attempt, now, ran_s)


def test_checkpoints_given_up_in_the_callers_thread_do_not_use_up_the_jobs_attempts() -> None:
    """Each of four steps' checkpoints meets a lock held past a lease, more stalls than the job has
    attempts (3): each stall's checkpoint is written once the lock goes and the job handed back, so
    the job resumes after its last step, never fails for the lock, and its one finishing attempt
    is all that counts."""
    clock = FakeClock()
    store = LockedNowAndThen(clock)
    engine = engine_on(store, clock, lease_s=10.0, max_attempts=3)
    steps = ("a", "b", "c", "d")
    ran: list[str] = []

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        for step in steps:
            if step not in ctx.checkpoints():
                ran.append(step)
                store.locked = True  # another process takes the writer lock as the step is recorded
                ctx.checkpoint(step)
        return {"steps": sorted(ctx.checkpoints())}

    engine.register("work", handle)
    job = engine.start("work", {})
    stalls = 0
    while engine.status(job.id).status not in (JobStatus.completed, JobStatus.failed) and stalls < 10:
        try:
            engine.run_pending()
        except Unavailable:
            stalls += 1
            store.locked = False
    done, row = engine.status(job.id), store.rows[job.id]
    assert (done.status, done.error, done.result) == (JobStatus.completed, None, {"steps": list(steps)})
    assert stalls == len(steps) > engine.max_attempts and ran == list(steps)
    assert row.tries == 1 and row.handed_over == len(steps)


def _stalled_at_a_checkpoint(clock: FakeClock) -> tuple[LockedNowAndThen, JobEngine, str, float]:
    """A job whose one step's checkpoint met a lock held past the lease (10 s): the engine keeps
    the checkpoint. Returns the store, the engine, the job and how long the attempt ran."""
    store = LockedNowAndThen(clock)
    engine = engine_on(store, clock, lease_s=10.0)

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if "a" not in ctx.checkpoints():
            store.locked = True
            ctx.checkpoint("a")
        return {"steps": sorted(ctx.checkpoints())}

    engine.register("work", handle)
    job = engine.start("work", {})
    began = clock.now()
    with pytest.raises(Unavailable):
        engine.run_pending()
    return store, engine, job.id, (clock.now() - began).total_seconds()


def test_a_stalled_attempt_counts_the_time_it_ran_not_the_wait_until_the_next_claim() -> None:
    """The hand-over a kept checkpoint makes counts how long the attempt ran (up to its give-up)
    in handed_over_s, which CAIRN_JOB_MAX_HANDED_OVER_S bounds: the caller's next run_pending may
    come hours later, and that idle time is no attempt's."""
    clock = FakeClock()
    store, engine, job_id, ran_s = _stalled_at_a_checkpoint(clock)
    clock.advance(3 * 3600)  # the caller runs the queue again three hours on
    store.locked = False
    engine.run_pending()
    row = store.rows[job_id]
    assert (row.status, row.handed_over) == (JobStatus.completed, 1)
    assert engine.lease_s <= row.handed_over_s <= ran_s  # its lease of waiting, and what ran before


def test_a_kept_outcome_of_a_job_another_process_then_ran_and_finished_is_dropped() -> None:
    """After the lease another process claimed the job (attempt 2) and finished it: the outcome
    this engine kept for attempt 1 is fenced out, never written over attempt 2's."""
    clock = FakeClock()
    store = StuckJobStore("status", clock)
    engine = engine_on(store, clock, lease_s=10.0)
    engine.register("work", lambda job, ctx: {"by": "first", "attempt": job.attempts})
    job = engine.start("work", {})
    with pytest.raises(Unavailable):
        engine.run_pending()

    store.refuse = lambda changes: False  # the lock went; the other process claims first
    other = engine_on(store, clock, lease_s=10.0)
    other.register("work", lambda job, ctx: {"by": "other", "attempt": job.attempts})
    other.run_pending()
    engine.run_pending()
    done = engine.status(job.id)
    assert (done.status, done.result) == (JobStatus.completed, {"by": "other", "attempt": 2})


@pytest.mark.parametrize("then", ["completed", "failed", "running", "forgotten"])
def test_a_dropped_kept_checkpoint_says_what_became_of_the_job(
    then: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The checkpoint kept for attempt 1 is fenced out once another process claimed the job after
    its lease: the warning says what that process did with it, not only that it took it."""
    clock = FakeClock()
    store, engine, job_id, _ = _stalled_at_a_checkpoint(clock)
    store.locked = False
    clock.advance(engine.lease_s)
    other = engine_on(store, clock, lease_s=10.0)

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        if then == "failed":
            raise NotFound("the document is gone")
        return {"by": "other"}

    other.register("work", handle)
    if then == "running":  # the other process's attempt still under way
        assert store.claim(clock.now(), clock.now().timestamp() + 100, job_id=job_id) is not None
    else:
        other.run_one(job_id)
    if then == "forgotten":  # finished, then forgotten (a retention sweep, an erasure)
        assert store.forget([job_id], None) == 1
    with caplog.at_level(logging.WARNING, logger="cairn.jobs"):
        engine.run_pending()
    said = [r.getMessage() for r in job_warnings(caplog) if "was not written" in r.getMessage()]
    expected = {
        "completed": "the job has since completed (attempt 2)",
        "failed": "the job has since failed (attempt 2): ",
        "running": "attempt 2 is running the job",
        "forgotten": "the job is no longer stored",
    }[then]
    assert len(said) == 1 and "checkpoint 'a' of job" in said[0] and expected in said[0], said
