"""The embedded queue's worker threads: one principal's long job does not keep another's waiting."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

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
