"""A clean stop hands running jobs over: two engines on one store (in-memory fake, SQLite file), a
short-lived process (`cairn mcp`, whose client closed its input) and a long one (`cairn serve`).
The short one's stop waits a grace at most, then puts its unfinished job back in the queue, and the
long one takes it at once, with no lease to wait out (the clock never moves past one here)."""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.job_engine import JobEngine
from cairn.adapters.local.job_rows import JobRow, JobStore
from cairn.adapters.local.sqlite_jobs import SqliteJobStore
from cairn.domain.errors import Conflict
from cairn.domain.models import Job, JobStatus
from cairn.ports.jobs import JobContext, JobHolds
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


def test_a_process_knows_a_handler_it_handed_back_is_still_running_until_it_returns(engines: Engines) -> None:
    """What `cairn serve` and `cairn mcp` ask before they exit (entrypoints/cli/leaving.py)."""
    short = engines()
    handler = Blocked()
    short.register("ingest", handler)
    short.start("ingest", {"name": "big.pdf"})
    assert short.running_here() == 0
    stop_while_running(short, handler)
    assert short.running_here() == 1
    handler.let_go.set()
    handler.first[0].join(WAIT_S)
    assert short.running_here() == 0


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
    assert store.release(row.id, row.attempts, clock.now(), 2.5)
    again = store.get(row.id)
    assert again is not None and (again.status, again.handed_over, again.handed_over_s) == (
        JobStatus.queued,
        1,
        2.5,
    )
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


class Hangs:
    """A handler that never ends on its own in any attempt: each waits until let go, writing
    progress over and over if `writes`, as a stuck or very long job would."""

    def __init__(self, *, writes: bool = False, cut_by: BaseException | None = None) -> None:
        self.started: queue.Queue[int] = queue.Queue()
        self.let_go, self.writes, self.cut_by = threading.Event(), writes, cut_by
        self.threads: list[threading.Thread] = []

    def __call__(self, job: Job, ctx: JobContext) -> dict[str, Any]:
        self.threads.append(threading.current_thread())
        self.started.put(job.attempts)
        while not self.let_go.wait(0.001 if self.writes else WAIT_S):
            with suppress(Conflict):  # handed back: a handler that goes on regardless
                ctx.progress(0.5, "still going")
        if self.cut_by is not None:
            raise self.cut_by
        ctx.progress(0.9)
        return {"by_attempt": job.attempts}

    def wait_started(self) -> int:
        return self.started.get(timeout=WAIT_S)

    def end(self) -> None:
        self.let_go.set()
        for thread in self.threads:
            thread.join(WAIT_S)


def limited(engines: Engines) -> JobEngine:
    """An engine that allows a job's handed-back attempts an hour of running in all."""
    engine = engines()
    engine.max_handed_over_s = 3600.0
    return engine


def test_a_job_handed_over_until_its_attempts_ran_too_long_fails_saying_why(
    engines: Engines, clock: FakeClock
) -> None:
    """Each short process runs the job 25 minutes, then stops: the third hand-over passes the hour
    allowed, and the job fails at its next claim rather than run in every session for ever."""
    handler = Hangs()
    job_id = ""
    for session in range(1, 4):
        short = limited(engines)
        short.register("ingest", handler)
        job_id = job_id or short.start("ingest", {}).id
        short.start_worker()
        assert handler.wait_started() == session
        clock.advance(25 * 60)
        short.stop_worker()
        handed = short.status(job_id)
        assert (handed.status, handed.attempts) == (JobStatus.queued, session)

    handler.end()
    long_ = limited(engines)
    ran: list[int] = []
    long_.register("ingest", lambda job, ctx: ran.append(job.attempts) or {})
    assert long_.run_pending() == 1
    failed = long_.status(job_id)
    assert (failed.status, failed.attempts, ran) == (JobStatus.failed, 4, [])  # given up at the claim
    assert failed.error is not None and "handed over 3 times without finishing" in failed.error
    assert "1 h 15 min" in failed.error


def test_short_hand_overs_within_the_limit_leave_the_job_to_finish(
    engines: Engines, clock: FakeClock
) -> None:
    handler = Hangs()
    job_id = ""
    for session in range(1, 6):  # five sessions of ten minutes: less than the hour allowed
        short = limited(engines)
        short.register("ingest", handler)
        job_id = job_id or short.start("ingest", {}).id
        short.start_worker()
        assert handler.wait_started() == session
        clock.advance(10 * 60)
        short.stop_worker()
    handler.end()
    long_ = limited(engines)
    long_.register("ingest", lambda job, ctx: {"by_attempt": job.attempts})
    assert long_.run_pending() == 1
    done = long_.status(job_id)
    assert (done.status, done.result) == (JobStatus.completed, {"by_attempt": 6})


def test_a_handed_back_attempt_cut_by_the_exit_ends_quietly(
    engines: Engines, caplog: pytest.LogCaptureFixture
) -> None:
    """At a process's exit the interpreter refuses the embedder's pool new work, and the handed-back
    ingest's handler fails with that: not the job's failure, so nothing is logged or recorded."""
    short, long_ = engines(), engines()
    handler = Hangs(cut_by=RuntimeError("cannot schedule new futures after interpreter shutdown"))
    short.register("ingest", handler)
    job = short.start("ingest", {})
    short.start_worker()
    handler.wait_started()
    short.stop_worker()
    with caplog.at_level(logging.DEBUG, logger="cairn.jobs"):
        handler.end()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
    handed = long_.status(job.id)
    assert (handed.status, handed.attempts, handed.error, handed.progress) == (JobStatus.queued, 1, None, 0.0)


class Watched:
    """A JobStore that notes any call made after it was closed, and a close while a call was in it."""

    def __init__(self, inner: JobStore) -> None:
        self.inner, self.inside, self.closed = inner, 0, False
        self.misuse: list[str] = []
        self._lock = threading.Lock()

    @contextmanager
    def _call(self, name: str) -> Iterator[None]:
        with self._lock:
            if self.closed:
                self.misuse.append(f"{name} after close")
            self.inside += 1
        try:
            yield
        finally:
            with self._lock:
                self.inside -= 1

    def insert(self, row: JobRow) -> JobRow:
        with self._call("insert"):
            return self.inner.insert(row)

    def get(self, job_id: str) -> JobRow | None:
        with self._call("get"):
            return self.inner.get(job_id)

    def claim(self, now: datetime, lease_until: float, **kwargs: Any) -> JobRow | None:
        with self._call("claim"):
            return self.inner.claim(now, lease_until, **kwargs)

    def update(self, job_id: str, attempt: int, now: datetime, changes: dict[str, Any]) -> bool:
        with self._call("update"):
            return self.inner.update(job_id, attempt, now, changes)

    def release(self, job_id: str, attempt: int, now: datetime, ran_s: float) -> bool:
        with self._call("release"):
            return self.inner.release(job_id, attempt, now, ran_s)

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None) -> int:
        with self._call("forget"):
            return self.inner.forget(job_ids, holds)

    def close(self) -> None:
        with self._lock:
            if self.inside:
                self.misuse.append("closed during a call")
            self.closed = True
        self.inner.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_close_gives_up_on_a_handler_that_never_returns_and_closes_no_store_under_it(
    kind: str, tmp_path: Path, clock: FakeClock
) -> None:
    inner: JobStore = MemoryJobStore() if kind == "memory" else SqliteJobStore(tmp_path / "jobs.sqlite3")
    store = Watched(inner)
    engine = JobEngine(store, clock, poll_s=0.01, stop_grace_s=GRACE_S)
    engine.close_wait_s = 0.2
    handler = Hangs(writes=True)  # its writes go on, refused, before and after the close
    engine.register("ingest", handler)
    job = engine.start("ingest", {})
    engine.start_worker()
    handler.wait_started()
    engine.stop_worker()
    closer = threading.Thread(target=engine.close, daemon=True)
    closer.start()
    closer.join(WAIT_S)
    waited_for_ever = closer.is_alive()
    handler.end()  # its last writes meet the closed store's gate, not the store
    closer.join(WAIT_S)
    assert not waited_for_ever
    assert store.misuse == [] and not any(thread.is_alive() for thread in handler.threads)
    after = (SqliteJobStore(tmp_path / "jobs.sqlite3") if kind == "sqlite" else inner).get(job.id)
    assert after is not None and (after.status, after.handed_over) == (JobStatus.queued, 1)
    assert after.progress < 0.9  # its last report, after the close, changed nothing
