"""The SQLite queue across restarts: jobs queued or running when a process dies still finish,
exactly once in effect, under a new runner on the same file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.domain.models import Job, JobStatus
from cairn.ports.clock import SystemClock
from cairn.ports.jobs import JobContext
from tests.fakes.clock import FakeClock

LEASE_S = 30.0


class Crash(BaseException):
    """The process dying mid-handler: nothing in the runner catches it."""


def counting_steps(effects: Counter[str], crash_after_one: bool = False) -> Any:
    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        for step in ("fetch", "store"):
            if step not in ctx.checkpoints():
                effects[step] += 1
                ctx.checkpoint(step)
            if crash_after_one:
                raise Crash
        return {"done": sorted(ctx.checkpoints())}

    return handle


def test_a_job_queued_before_a_restart_runs_after_it(tmp_path: Path) -> None:
    db, clock = tmp_path / "jobs.sqlite3", FakeClock()
    before = SqliteJobRunner(db, clock)
    job = before.start("steps", {"doc": "a"}, idempotency_key="ingest:a")
    before.close()  # the process stops before any worker ran the job

    effects: Counter[str] = Counter()
    after = SqliteJobRunner(db, clock)
    after.register("steps", counting_steps(effects))
    assert after.start("steps", {"doc": "a"}, idempotency_key="ingest:a").id == job.id  # key survives too
    assert after.run_pending() == 1
    assert after.status(job.id).result == {"done": ["fetch", "store"]}
    assert effects == Counter({"fetch": 1, "store": 1})
    after.close()


def test_a_job_running_when_its_process_died_resumes_after_the_lease(tmp_path: Path) -> None:
    db, clock = tmp_path / "jobs.sqlite3", FakeClock()
    effects: Counter[str] = Counter()
    crashed = SqliteJobRunner(db, clock, lease_s=LEASE_S)
    crashed.register("steps", counting_steps(effects, crash_after_one=True))
    job = crashed.start("steps", {})
    with pytest.raises(Crash):
        crashed.run_pending()
    crashed.close()

    restarted = SqliteJobRunner(db, clock, lease_s=LEASE_S)
    restarted.register("steps", counting_steps(effects))
    assert restarted.run_pending() == 0  # the dead worker's lease still holds
    assert restarted.status(job.id).status is JobStatus.running

    clock.advance(LEASE_S + 1)
    assert restarted.run_pending() == 1
    done = restarted.status(job.id)
    assert (done.status, done.attempts) == (JobStatus.completed, 2)
    assert effects == Counter({"fetch": 1, "store": 1})
    restarted.close()


CHILD = """
import os, sys
from pathlib import Path
from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.ports.clock import SystemClock

db, effects = Path(sys.argv[1]), Path(sys.argv[2])

def handle(job, ctx):
    with effects.open("a") as out:
        out.write("fetch\\n")
    ctx.checkpoint("fetch")
    os._exit(17)  # the process dies between two steps, without any cleanup

runner = SqliteJobRunner(db, SystemClock(), lease_s={lease})
runner.register("steps", handle)
print(runner.start("steps", {{}}).id, flush=True)
runner.run_pending()
"""


def test_a_real_process_killed_mid_job_leaves_a_job_the_next_process_finishes(tmp_path: Path) -> None:
    db, effects = tmp_path / "jobs.sqlite3", tmp_path / "effects.log"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD.format(lease=LEASE_S)), str(db), str(effects)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 17, child.stderr
    job_id = child.stdout.strip()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        for step in ("fetch", "store"):
            if step not in ctx.checkpoints():
                with effects.open("a") as out:
                    out.write(step + "\n")
                ctx.checkpoint(step)
        return {"ok": True}

    later = FakeClock(start=datetime.now(UTC) + timedelta(seconds=LEASE_S + 5))
    runner = SqliteJobRunner(db, later, lease_s=LEASE_S)
    runner.register("steps", handle)
    assert runner.run_pending() == 1
    done = runner.status(job_id)
    assert (done.status, done.attempts, done.result) == (JobStatus.completed, 2, {"ok": True})
    assert effects.read_text().splitlines() == ["fetch", "store"]
    runner.close()


def test_two_runners_on_one_file_run_each_job_once(tmp_path: Path) -> None:
    db, clock = tmp_path / "jobs.sqlite3", FakeClock()
    runs: Counter[str] = Counter()
    lock = threading.Lock()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        with lock:
            runs[job.id] += 1
        ctx.progress(0.5)
        return {}

    runners = [SqliteJobRunner(db, clock), SqliteJobRunner(db, clock)]
    for runner in runners:
        runner.register("n", handle)
    ids = [runners[0].start("n", {"i": i}).id for i in range(60)]

    threads = [threading.Thread(target=r.run_pending) for r in runners for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert runs == Counter(dict.fromkeys(ids, 1))
    assert {runners[1].status(i).status for i in ids} == {JobStatus.completed}
    for runner in runners:
        runner.close()


def test_a_long_step_keeps_its_lease_so_another_runner_never_takes_it_again(tmp_path: Path) -> None:
    """A handler that reports no progress for several leases (embedding one big file) still holds
    its job: its runner renews the lease while it runs, so a second process on the file (`cairn
    mcp` beside `cairn serve`) does not run it again as if its worker had died."""
    db, lease = tmp_path / "jobs.sqlite3", 0.5
    started, release = threading.Event(), threading.Event()
    runs: Counter[str] = Counter()

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        runs[job.id] += 1
        started.set()
        assert release.wait(30)  # one long step, no progress reported
        return {"done": True}

    first, second = (SqliteJobRunner(db, SystemClock(), lease_s=lease) for _ in range(2))
    for runner in (first, second):
        runner.register("long", handle)
    job = first.start("long", {})
    worker = threading.Thread(target=first.run_pending)
    worker.start()
    assert started.wait(30)
    time.sleep(lease * 4)  # four leases' worth
    assert second.run_pending() == 0  # still held by the live worker
    release.set()
    worker.join()
    assert first.status(job.id).status is JobStatus.completed and runs == Counter({job.id: 1})
    for runner in (first, second):
        runner.close()
