"""A clean stop hands running jobs over: two engines on one store (in-memory fake, SQLite file), a
short-lived process (`cairn mcp`, whose client closed its input) and a long one (`cairn serve`).
The short one's stop waits a grace at most, then puts its unfinished job back in the queue, and the
long one takes it at once, with no lease to wait out (the clock never moves past one here)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.job_engine import JobEngine
from cairn.adapters.local.job_rows import JobRow, JobStore
from cairn.adapters.local.sqlite_jobs import SqliteJobStore
from cairn.domain.errors import Conflict
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobStore

WAIT_S = 10.0  # a bound on waits that end at once when things work
GRACE_S = 0.05

Engines = Callable[..., JobEngine]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite"])
def engines(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Engines]:
    """Engines over one store, as processes over one jobs file: each its own store object."""
    shared = MemoryJobStore()
    made: list[JobEngine] = []

    def engine(**kwargs: Any) -> JobEngine:
        store: JobStore = shared if request.param == "memory" else SqliteJobStore(tmp_path / "jobs.sqlite3")
        made.append(JobEngine(store, clock, poll_s=0.01, **kwargs))
        made[-1].stop_grace_s = GRACE_S
        return made[-1]

    yield engine
    for each in made:
        each.close()


class Blocked:
    """A handler whose first attempt waits in its process until let go, keeping its context."""

    def __init__(self, fail_from_attempt: int | None = None) -> None:
        self.started, self.let_go = threading.Event(), threading.Event()
        self.stale: list[JobContext] = []
        self.first: list[threading.Thread] = []  # the thread running attempt 1
        self.fail_from_attempt = fail_from_attempt

    def __call__(self, job: Job, ctx: JobContext) -> dict[str, Any]:
        if job.attempts == 1:
            self.stale.append(ctx)
            self.first.append(threading.current_thread())
            self.started.set()
            assert self.let_go.wait(3 * WAIT_S)  # outlasts the stop's wait, which must not need it
            return {"by_attempt": 1}
        if self.fail_from_attempt is not None and job.attempts >= self.fail_from_attempt:
            raise RuntimeError(f"attempt {job.attempts} failed")
        ctx.checkpoint("done", job.attempts)
        return {"by_attempt": job.attempts}


def stop_while_running(short: JobEngine, handler: Blocked) -> None:
    """Start the short process's workers, let its job begin, and stop it: the stop must return
    (after its grace) while the handler still waits."""
    short.start_worker()
    assert handler.started.wait(WAIT_S)
    stopper = threading.Thread(target=short.stop_worker, daemon=True)
    stopper.start()
    stopper.join(WAIT_S)
    if stopper.is_alive():
        handler.let_go.set()
        raise AssertionError("stop_worker waited for the running handler")


def test_a_job_running_when_its_process_stops_is_taken_at_once_by_another(engines: Engines) -> None:
    short, long_ = engines(), engines()
    handler = Blocked()
    for engine in (short, long_):
        engine.register("ingest", handler)
    job = short.start("ingest", {"name": "big.pdf"})

    stop_while_running(short, handler)

    handed = long_.status(job.id)
    assert (handed.status, handed.attempts) == (JobStatus.queued, 1)
    assert long_.run_pending() == 1  # no lease to wait out
    done = long_.status(job.id)
    assert (done.status, done.attempts, done.result) == (JobStatus.completed, 2, {"by_attempt": 2})
    handler.let_go.set()


def test_the_handed_back_attempts_later_writes_change_nothing(engines: Engines) -> None:
    short, long_ = engines(), engines()
    handler = Blocked()
    for engine in (short, long_):
        engine.register("ingest", handler)
    job = short.start("ingest", {})
    stop_while_running(short, handler)
    stale = handler.stale[0]

    with pytest.raises(Conflict):  # queued again, not yet taken
        stale.progress(0.9, "still going")
    assert long_.status(job.id).progress == 0.0

    assert long_.run_pending() == 1
    with pytest.raises(Conflict):  # taken and finished by attempt 2
        stale.checkpoint("stale", True)
    handler.let_go.set()  # attempt 1 returns its result: refused too
    handler.first[0].join(WAIT_S)

    done = long_.status(job.id)
    assert (done.status, done.result, done.progress) == (JobStatus.completed, {"by_attempt": 2}, 1.0)


def test_a_handed_back_attempt_does_not_count_toward_max_attempts_but_a_failed_one_does(
    engines: Engines,
) -> None:
    short, long_ = engines(max_attempts=2), engines(max_attempts=2)
    handler = Blocked(fail_from_attempt=2)
    for engine in (short, long_):
        engine.register("ingest", handler)
    job = short.start("ingest", {})
    stop_while_running(short, handler)
    handler.let_go.set()

    assert long_.run_pending() == 2  # attempts 2 and 3: two failures are the two allowed
    failed = long_.status(job.id)
    assert (failed.status, failed.attempts, failed.error) == (
        JobStatus.failed,
        3,
        "RuntimeError: attempt 3 failed",
    )


def test_a_stopping_process_claims_nothing_and_loses_no_job(engines: Engines) -> None:
    short, long_ = engines(), engines()
    ran: list[str] = []
    for engine in (short, long_):
        engine.register("note", lambda job, ctx: ran.append(job.input["n"]) or {})
    short.stop_worker()
    queued = [short.start("note", {"n": str(n)}).id for n in range(3)]  # a request still in flight
    assert short.run_pending() == 0
    assert short.run_one(queued[0]) is False

    assert long_.run_pending() == 3
    assert sorted(ran) == ["0", "1", "2"]
    assert {long_.status(job_id).status for job_id in queued} == {JobStatus.completed}


class StopsDuringClaim(SqliteJobStore):
    """A store whose claim lets the process's stop begin (and its hand-back look) before the
    claimed row reaches the engine."""

    stop: Callable[[], None] = staticmethod(lambda: None)

    def claim(
        self,
        now: datetime,
        lease_until: float,
        *,
        per_principal: int | None = None,
        job_id: str | None = None,
    ) -> JobRow | None:
        row = super().claim(now, lease_until, per_principal=per_principal, job_id=job_id)
        self.stop()
        return row


def test_a_job_claimed_as_the_stop_begins_is_handed_back_not_run(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "jobs.sqlite3"
    racing = StopsDuringClaim(path)
    short = JobEngine(racing, clock)
    long_ = JobEngine(SqliteJobStore(path), clock)
    ran: list[int] = []
    for engine in (short, long_):
        engine.register("note", lambda job, ctx: ran.append(job.attempts) or {})
    job = short.start("note", {})
    racing.stop = short.stop_worker

    assert short.run_pending() == 0
    assert ran == [] and long_.status(job.id).status is JobStatus.queued
    assert long_.run_pending() == 1 and ran == [2]
    short.close()
    long_.close()


def test_a_handler_that_finishes_within_the_grace_completes_its_job(tmp_path: Path, clock: FakeClock) -> None:
    short = JobEngine(SqliteJobStore(tmp_path / "jobs.sqlite3"), clock, poll_s=0.01)
    short.stop_grace_s = WAIT_S
    handler = Blocked()
    short.register("ingest", handler)
    job = short.start("ingest", {})
    short.start_worker()
    assert handler.started.wait(WAIT_S)
    handler.let_go.set()
    short.stop_worker()  # waits for the handler, which was let go
    done = short.status(job.id)
    assert (done.status, done.attempts, done.result) == (JobStatus.completed, 1, {"by_attempt": 1})
    short.close()


def test_a_jobs_file_from_before_hand_overs_opens_and_counts_them(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "jobs.sqlite3"
    with sqlite3.connect(path) as conn:  # the table as an earlier release made it
        conn.execute(
            "CREATE TABLE jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, brain_id TEXT, principal TEXT, "
            "status TEXT NOT NULL, progress REAL NOT NULL DEFAULT 0, message TEXT, input TEXT NOT NULL, "
            "result TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0, idempotency_key TEXT UNIQUE, "
            "checkpoints TEXT NOT NULL DEFAULT '{}', lease_until REAL, created_at TEXT NOT NULL, "
            "updated_at TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO jobs (id, kind, status, input, attempts, created_at, updated_at) "
            "VALUES ('job_old', 'note', 'queued', '{}', 0, '2026-01-01T00:00:00+00:00', "
            "'2026-01-01T00:00:00+00:00')"
        )
    conn.close()
    store = SqliteJobStore(path)
    now = clock.now()
    row = store.claim(now, now.timestamp() + 60)
    assert row is not None and (row.id, row.handed_over) == ("job_old", 0)
    assert store.release(row.id, row.attempts, clock.now())
    again = store.get(row.id)
    assert again is not None and (again.status, again.handed_over) == (JobStatus.queued, 1)
    store.close()


class Closing(MemoryJobStore):
    """A store that notes whether a handler of its engine was still running when it was closed."""

    def __init__(self, handler_running: threading.Event) -> None:
        super().__init__()
        self.handler_running = handler_running
        self.closed_under_a_handler: bool | None = None

    def close(self) -> None:
        self.closed_under_a_handler = self.handler_running.is_set()


def test_close_after_a_stop_waits_for_the_handed_back_handler_before_closing_the_store(
    clock: FakeClock,
) -> None:
    running = threading.Event()
    store = Closing(running)
    engine = JobEngine(store, clock, poll_s=0.01, stop_grace_s=GRACE_S)
    handler = Blocked()

    def tracked(job: Job, ctx: JobContext) -> dict[str, Any]:
        running.set()
        try:
            return handler(job, ctx)
        finally:
            running.clear()

    engine.register("ingest", tracked)
    engine.start("ingest", {})
    stop_while_running(engine, handler)  # handed back; attempt 1 still runs in this process
    closer = threading.Thread(target=engine.close, daemon=True)
    closer.start()
    closer.join(0.2)
    waited = closer.is_alive()
    handler.let_go.set()
    closer.join(WAIT_S)
    # its finish, a store call, must not meet a closed store (a SQLite connection closed under it)
    assert store.closed_under_a_handler is False and waited
