"""The embedded queue's worker threads: one principal's long job does not keep another's waiting,
and a job store locked by another process for a while does not stop them."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local import sqlite_threads
from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.domain.models import Job, JobStatus
from cairn.ports.clock import SystemClock
from cairn.ports.jobs import JobContext

WAIT_S = 20.0


def test_another_principals_job_runs_while_one_principals_long_job_holds_a_worker(tmp_path: Path) -> None:
    runner = SqliteJobRunner(tmp_path / "jobs.sqlite3", SystemClock(), poll_s=60.0)  # the default 2 workers
    started = {name: threading.Event() for name in ("a1", "a2", "b1")}
    release = threading.Event()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        name = job.input["name"]
        started[name].set()
        if job.principal == "alice":  # a 5 MB transcript's extraction, say
            assert release.wait(WAIT_S)
        return {"name": name}

    runner.register("work", handle)
    runner.start_worker()
    try:
        a1 = runner.start("work", {"name": "a1"}, principal="alice")
        assert started["a1"].wait(WAIT_S)
        a2 = runner.start("work", {"name": "a2"}, principal="alice")
        b1 = runner.start("work", {"name": "b1"}, principal="bob")  # polling is a minute off: start() wakes

        assert started["b1"].wait(WAIT_S)
        assert wait_for_status(runner, b1.id, JobStatus.completed)
        assert not release.is_set() and runner.status(a1.id).status is JobStatus.running
        assert not started["a2"].is_set() and runner.status(a2.id).status is JobStatus.queued  # alice's cap

        release.set()
        assert wait_for_status(runner, a2.id, JobStatus.completed)
        assert runner.status(a1.id).status is JobStatus.completed
    finally:
        release.set()
        runner.stop_worker()
        runner.close()


def wait_for_status(runner: SqliteJobRunner, job_id: str, status: JobStatus) -> bool:
    deadline = time.monotonic() + WAIT_S
    while runner.status(job_id).status is not status:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_workers_survive_a_locked_job_store_saying_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the job store's writer lock past the busy timeout (shortened here):
    each claim is refused as unavailable, logged once, and the workers claim again afterwards."""
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", 0.1)
    path = tmp_path / "jobs.sqlite3"
    runner = SqliteJobRunner(path, SystemClock(), poll_s=0.02)
    runner.register("work", lambda job, ctx: {"name": job.input["name"]})
    refused: list[Exception] = []
    claim = runner._store.claim

    def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            return claim(*args, **kwargs)
        except Exception as exc:
            refused.append(exc)
            raise

    monkeypatch.setattr(runner._store, "claim", counted)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with caplog.at_level(logging.WARNING, logger="cairn.jobs"):
            runner.start_worker()
            deadline = time.monotonic() + WAIT_S
            while len(refused) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            holder.execute("ROLLBACK")
            job = runner.start("work", {"name": "after"})
            assert wait_for_status(runner, job.id, JobStatus.completed)
    finally:
        holder.close()
        runner.stop_worker()
        runner.close()
    assert len(refused) >= 4
    said = [r for r in caplog.records if r.name == "cairn.jobs" and r.levelno >= logging.WARNING]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert "refused a claim" in said[0].getMessage() and said[0].exc_info is None


def test_a_job_finishing_while_the_job_store_is_locked_keeps_its_result_saying_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The job store's writer lock is held by another process while a job runs and as it finishes:
    its lease renewals and its final write are refused, each said once (no traceback), and the final
    write is tried again until it goes in, so the job is not run a second time after its lease."""
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", 0.05)
    path = tmp_path / "jobs.sqlite3"
    runner = SqliteJobRunner(path, SystemClock(), poll_s=0.02, lease_s=0.3, workers=1)
    runs: list[str] = []
    running, finish = threading.Event(), threading.Event()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.id)
        running.set()
        assert finish.wait(WAIT_S)
        return {"name": job.input["name"], "run": len(runs)}

    runner.register("work", handle)
    update = runner._store.update
    refused: list[dict[str, Any]] = []

    def counted(job_id: str, attempt: int, now: Any, changes: dict[str, Any]) -> bool:
        try:
            return update(job_id, attempt, now, changes)
        except Exception:
            refused.append(changes)
            raise

    monkeypatch.setattr(runner._store, "update", counted)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        with caplog.at_level(logging.WARNING, logger="cairn.jobs"):
            job = runner.start("work", {"name": "locked"})
            runner.start_worker()
            assert running.wait(WAIT_S)
            holder.execute("BEGIN IMMEDIATE")
            deadline = time.monotonic() + WAIT_S
            while len(refused) < 3 and time.monotonic() < deadline:  # renewals
                time.sleep(0.01)
            finish.set()
            while sum("status" in c for c in refused) < 3 and time.monotonic() < deadline:  # final writes
                time.sleep(0.01)
            time.sleep(0.5)  # the lease has run out meanwhile
            holder.execute("ROLLBACK")
            assert wait_for_status(runner, job.id, JobStatus.completed)
            result = runner.status(job.id).result
    finally:
        finish.set()
        holder.close()
        runner.stop_worker()
        runner.close()
    assert runs == [job.id] and result == {"name": "locked", "run": 1}
    assert sum("status" not in c for c in refused) >= 3 and sum("status" in c for c in refused) >= 3
    said = [r for r in caplog.records if r.name == "cairn.jobs" and r.levelno >= logging.WARNING]
    assert sorted(("renewing" in r.getMessage(), "finishing" in r.getMessage()) for r in said) == [
        (False, True),
        (True, False),
    ], [r.getMessage() for r in said]
    assert all(r.exc_info is None for r in said)


def test_a_job_handed_back_while_the_job_store_is_locked_says_so_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", 0.05)
    path = tmp_path / "jobs.sqlite3"
    runner = SqliteJobRunner(path, SystemClock(), poll_s=0.02, workers=1, stop_grace_s=0.0, close_wait_s=0.0)
    running, finish = threading.Event(), threading.Event()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        running.set()
        assert finish.wait(WAIT_S)
        return {}

    runner.register("work", handle)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        job = runner.start("work", {})
        runner.start_worker()
        assert running.wait(WAIT_S)
        holder.execute("BEGIN IMMEDIATE")
        with caplog.at_level(logging.WARNING, logger="cairn.jobs"):
            runner.stop_worker()  # hands the job back: refused
        holder.execute("ROLLBACK")
        assert runner.status(job.id).status is JobStatus.running  # it waits out its lease
    finally:
        finish.set()
        holder.close()
        runner.close()
    said = [r for r in caplog.records if r.name == "cairn.jobs" and r.levelno >= logging.WARNING]
    assert [r.exc_info for r in said if "hand" in r.getMessage() and job.id in r.getMessage()] == [None]


def test_a_job_whose_progress_and_checkpoint_meet_a_locked_job_store_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the job store's writer lock while a handler reports progress and
    records a checkpoint: the report is skipped (said once, no traceback), the checkpoint waits for
    the store and goes in, and the attempt is neither failed nor run again."""
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", 0.05)
    path = tmp_path / "jobs.sqlite3"
    runner = SqliteJobRunner(path, SystemClock(), poll_s=0.02, workers=1)
    runs: list[str] = []
    running, locked, reported = threading.Event(), threading.Event(), threading.Event()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs.append(job.id)
        running.set()
        assert locked.wait(WAIT_S)
        ctx.progress(0.5, "half")
        reported.set()
        ctx.checkpoint("step", {"n": 1})
        return {"checkpoints": ctx.checkpoints()}

    runner.register("work", handle)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        with caplog.at_level(logging.WARNING, logger="cairn.jobs"):
            job = runner.start("work", {})
            runner.start_worker()
            assert running.wait(WAIT_S)
            holder.execute("BEGIN IMMEDIATE")
            locked.set()
            assert reported.wait(WAIT_S)
            time.sleep(0.3)  # the checkpoint is refused a few times meanwhile
            holder.execute("ROLLBACK")
            assert wait_for_status(runner, job.id, JobStatus.completed)
            done = runner.status(job.id)
    finally:
        locked.set()
        holder.close()
        runner.stop_worker()
        runner.close()
    assert runs == [job.id] and done.attempts == 1 and done.result == {"checkpoints": {"step": {"n": 1}}}
    said = [r for r in caplog.records if r.name == "cairn.jobs" and r.levelno >= logging.WARNING]
    assert all(r.exc_info is None for r in said), [r.getMessage() for r in said]
    assert sum("progress" in r.getMessage() for r in said) == 1
    assert sum("checkpoint 'step'" in r.getMessage() for r in said) == 1
