"""`cairn serve` and `cairn mcp` signalled at the edges of their start: while the store opens
(no job claimed yet: the process ends at once as a clean stop) and just after the job worker
claimed a job (handed back, not left leased until its lease runs out)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from tests.support.processes import environment, free_port
from tests.support.signal_stops import (
    EXIT_S,
    QUEUED,
    job_row,
    long_file,
)

pytestmark = pytest.mark.integration


SIGNALLED_AT = """
import os, signal, sqlite3, sys, time
from cairn.entrypoints.cli import main, serve
from cairn.services.documents import index_sweeper

moment, sig = sys.argv[1], getattr(signal, sys.argv[2])
data = sys.argv[sys.argv.index("--data-dir") + 1]
settle, start_sweeper = serve.settle, index_sweeper.IndexSweeper.start


def while_starting(container):  # the store is open, the model loaded, no job claimed yet
    os.kill(os.getpid(), sig)
    settle(container)


def once_a_job_is_claimed(self):  # the job worker has started and claimed the queued job
    deadline = time.monotonic() + 60
    with sqlite3.connect(os.path.join(data, "jobs.sqlite3")) as db:
        while db.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()[0] == 0:
            assert time.monotonic() < deadline, "the queued job was never claimed"
            time.sleep(0.02)
    os.kill(os.getpid(), sig)
    start_sweeper(self)


if moment == "starting":
    serve.settle = while_starting
else:
    index_sweeper.IndexSweeper.start = once_a_job_is_claimed
sys.exit(main(sys.argv[3:]))
"""


def signalled_at(tmp_path: Path, command: str, moment: str, sig: signal.Signals) -> subprocess.Popen[bytes]:
    """`cairn COMMAND` on tmp_path/data, sending itself `sig` at the `moment` SIGNALLED_AT names."""
    options = ["--port", str(free_port())] if command == "serve" else []
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            SIGNALLED_AT,
            moment,
            sig.name,
            command,
            *options,
            "--data-dir",
            str(tmp_path / "data"),
        ],
        stdin=subprocess.PIPE,  # kept open: `cairn mcp`'s session ends at the signal, not at stdin's close
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environment(extra=QUEUED),
    )


def finished(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=EXIT_S * 2)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stderr.decode(errors="replace")


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_while_starting_ends_the_process_at_once_as_a_clean_stop(
    tmp_path: Path, command: str, sig: signal.Signals
) -> None:
    """Before the job worker starts nothing can be claimed: the process ends at once, with the
    status of a clean stop. SIGTERM and SIGHUP had Python's default, which killed it."""
    code, stderr = finished(signalled_at(tmp_path, command, "starting", sig))
    assert code == (130 if sig == signal.SIGINT else 0), stderr[-2000:]
    assert f"{sig.name} while starting" in stderr
    assert "Traceback" not in stderr, stderr[-2000:]


def queued_ingest(data: Path, folder: Path) -> str:
    """A long file ingest queued on the data directory, for the next process's worker; its id."""
    container = build_container(Settings(data_dir=data, ingest_queue_bytes=0))  # no worker runs here
    brain = container.brains.create(name="Home", slug="home")
    job_id = container.ingest.ingest_bytes(brain, long_file(folder).read_bytes(), name="rota.md").job_id
    assert job_id is not None
    return job_id


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_signal_just_after_the_job_worker_claimed_a_job_hands_it_back(tmp_path: Path, command: str) -> None:
    """Between the job worker's start and the server's (or the stdio session's) taking signals, a
    SIGTERM killed the process and left the job it had claimed leased, as a crash does: it waited
    out its lease. The signal is now kept for the server, which stops as soon as it starts."""
    data = tmp_path / "data"
    job_id = queued_ingest(data, tmp_path)
    code, stderr = finished(signalled_at(tmp_path, command, "claimed", signal.SIGTERM))
    assert code == 0, stderr[-2000:]
    job = job_row(data, job_id)
    if job["status"] != "completed":
        assert job == {"status": "queued", "attempts": 1, "handed_over": 1, "lease_until": None}, job
