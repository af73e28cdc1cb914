"""`cairn mcp` and `cairn serve` stopped by a signal stop as cleanly as when their input closes: the
job running there is handed back to the queue (not left claimed until its lease runs out), the reads
the session's searches counted in memory are written, and the exit status is a normal one.

MCP clients send SIGTERM two seconds after closing a stdio server's input, some at once; Python's
default for it ended `cairn mcp` where it stood, and uvicorn ended `cairn serve` by raising SIGTERM
again once it had shut down, before the server's own clean stop.

A signal at the edges of the start: test_stop_signals_starting.py; more signals than one:
test_stop_signals_again.py; what they share: tests/support/signal_stops.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import CAIRN, environment, start
from tests.support.signal_stops import (
    EXIT_S,
    QUESTION,
    QUEUED,
    SEARCHES,
    assert_reads_counted,
    job_row,
    long_file,
    remember_and_search,
    served_tool,
)
from tests.support.stopping import WAIT_S, StdioSession

pytestmark = pytest.mark.integration

EMBEDDING_S = 2.0  # by then the running ingest has chunked its file and is embedding it


def wordy_file(folder: Path) -> Path:
    """A file of long sections: each embedding run of its ingest takes the model a while, so the
    handler is inside the model most of the time."""
    path = folder / "log.md"
    words = " ".join(f"crane{i} lifted cargo{i % 13} at berth{i % 7} before noon" for i in range(40))
    path.write_text("\n\n".join(f"## Day {i}\n\n{words} day{i}." for i in range(1_500)), encoding="utf-8")
    return path


def wait_until_running(data: Path, job_id: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while job_row(data, job_id)["status"] != "running":
        assert time.monotonic() < deadline, f"job {job_id} never started"
        time.sleep(0.05)


def assert_stopped_cleanly(data: Path, job_id: str, path: str) -> None:
    job = job_row(data, job_id)
    if job["status"] != "completed":  # it could not have finished in a second, but if it did
        assert job == {"status": "queued", "attempts": 1, "handed_over": 1, "lease_until": None}, job
    assert_reads_counted(data, path)


@pytest.fixture
def stdio(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StdioSession]:
    """`cairn mcp` driven line by line: the client keeps stdin open, as one that signals at once
    does. What it logs goes to stderr.log."""
    env = environment(extra={**QUEUED, **(getattr(request, "param", None) or {})})
    command = [CAIRN, "mcp", "--data-dir", str(tmp_path / "data")]
    server = StdioSession(command, tmp_path / "stderr.log", env, client="signals")
    try:
        yield server
    finally:
        server.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, None])
def test_a_signal_stops_cairn_mcp_as_closing_stdin_does(
    stdio: StdioSession, tmp_path: Path, sig: int | None
) -> None:
    """None: the client closes stdin, as most end a session. The handed-back ingest, still embedding
    when the process exits, is cut short there (the interpreter refuses its embedder new runs):
    that is no failure of the job, and nothing says it failed."""
    data = tmp_path / "data"
    job_id, path = embedding(stdio, tmp_path)
    if sig is None:
        assert stdio.process.stdin is not None
        stdio.process.stdin.close()
    else:
        stdio.process.send_signal(sig)
    code = stdio.process.wait(timeout=EXIT_S)
    assert_stopped_cleanly(data, job_id, path)
    assert code == 0
    logged = stdio.logged()
    assert "Traceback" not in logged and "failed" not in logged, logged[-3000:]


def embedding(stdio: StdioSession, tmp_path: Path, file: Path | None = None) -> tuple[str, str]:
    """A memory found by SEARCHES searches, then an ingest job still embedding: its id, the path."""
    stdio.tool("memory_create_brain", {"name": "Home", "slug": "home"})
    path = stdio.tool("memory_remember", {"content": "The boiler service is due in March.", "brain": "home"})[
        "path"
    ]
    for _ in range(SEARCHES):
        found = stdio.tool("memory_search", {"query": QUESTION, "brain": "home"})
        assert path in json.dumps(found)
    ingested = file or long_file(tmp_path)
    job_id = stdio.tool("memory_ingest_file", {"path": str(ingested), "brain": "home"})["job_id"]
    wait_until_running(tmp_path / "data", job_id)
    time.sleep(EMBEDDING_S)
    return job_id, path


ONE_RUN_AT_A_TIME = {"CAIRN_ONNX_THREADS": "1", "CAIRN_ONNX_WORKERS": "1"}


@pytest.mark.parametrize("stdio", [ONE_RUN_AT_A_TIME], indirect=True)
def test_cairn_mcp_ends_cleanly_while_a_handed_back_ingest_runs_the_model(
    stdio: StdioSession, tmp_path: Path
) -> None:
    """With one embedding run at a time, the ingest's handler runs the model on its own (daemon)
    thread, and is inside it when the process ends: onnxruntime's teardown at exit aborted the
    process under it (SIGABRT, "terminate called without an active exception")."""
    job_id, path = embedding(stdio, tmp_path, wordy_file(tmp_path))
    assert stdio.process.stdin is not None
    stdio.process.stdin.close()
    code = stdio.process.wait(timeout=EXIT_S)
    assert_stopped_cleanly(tmp_path / "data", job_id, path)
    logged = stdio.logged()
    assert code == 0, logged[-3000:]
    assert "terminate called" not in logged and "Traceback" not in logged, logged[-3000:]


def test_sigterm_stops_cairn_serve_after_its_clean_stop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rota = long_file(tmp_path)
    server = start(data, extra={**QUEUED, "CAIRN_INGEST_ROOT": str(tmp_path)})
    try:
        path = remember_and_search(server)
        job_id = served_tool(server, "memory_ingest_file", {"path": str(rota), "brain": "home"})["job_id"]
        wait_until_running(data, job_id)

        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=EXIT_S)
        assert_stopped_cleanly(data, job_id, path)
        assert code == 0
    finally:
        server.kill()


ABANDONED_EMBED = """
import atexit, sys, threading, time
from cairn.adapters.local.onnx_embedder import OnnxEmbedder

embedder = OnnxEmbedder(threads=1, workers=2)
runs, run = [], embedder._run

def counted(encodings):
    runs.append(len(encodings))
    time.sleep(0.05)  # the run of a long text
    return run(encodings)

embedder._run = counted
texts = [f"berth {i}: the crane rota for day {i % 7}" for i in range(int(sys.argv[1]))]
threading.Thread(target=embedder.embed, args=(texts,), daemon=True).start()
deadline = time.monotonic() + 60
while len(runs) < 10 and time.monotonic() < deadline:  # well under way, as a handed-back job's
    time.sleep(0.01)
atexit.register(lambda: print(len(runs), flush=True))  # after the interpreter waited for the pool
"""


def test_an_embed_left_running_does_not_hold_the_exit_for_all_its_texts() -> None:
    """A handed-back job's thread is left embedding when its process exits, and the interpreter
    runs what the embedder's pool has queued before it exits: all of a large file's texts made a
    clean stop take most of a minute."""
    texts = 400
    done = subprocess.run(
        [sys.executable, "-c", ABANDONED_EMBED, str(texts)],
        capture_output=True,
        text=True,
        timeout=WAIT_S * 2,
        env=environment(),
        check=False,
    )
    ran = int(done.stdout.strip().splitlines()[-1])
    assert 10 <= ran < texts // 4, (ran, done.stderr[-1000:])


WITHOUT_POSIX_SIGNALS = """
import asyncio, signal, sys
del signal.SIGHUP  # Windows has no SIGHUP ...

def refused(self, sig, callback, *args):
    raise NotImplementedError  # ... and its event loops take no signal handlers (BaseEventLoop's)

asyncio.unix_events._UnixSelectorEventLoop.add_signal_handler = refused
from cairn.entrypoints.cli import main

sys.exit(main(["mcp", "--data-dir", sys.argv[1]]))
"""


def test_cairn_mcp_runs_where_posix_signals_do_not_exist(tmp_path: Path) -> None:
    """On Windows `signal.SIGHUP` is missing and asyncio's loops refuse signal handlers: the stop
    at a signal is left out there, and the session runs and ends at stdin's close as before."""
    client = {"name": "windows", "version": "1"}
    lines = [
        {
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
        },
        {"method": "notifications/initialized"},
        {"id": 2, "method": "tools/list", "params": {}},
    ]
    process = subprocess.Popen(
        [sys.executable, "-c", WITHOUT_POSIX_SIGNALS, str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write("".join(json.dumps({"jsonrpc": "2.0", **line}) + "\n" for line in lines))
        process.stdin.flush()
        answers: dict[Any, Any] = {}
        while 2 not in answers:  # stdin stays open until the list is answered, as a client keeps it
            line = process.stdout.readline()
            if not line:
                break
            answer = json.loads(line)
            answers[answer.get("id")] = answer
        process.stdin.close()  # then the session ends at stdin's close
        process.stdin = None  # closed: communicate only reads what is left
        _, stderr = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "memory_search" in json.dumps(answers.get(2)), stderr[-2000:]
    assert process.returncode == 0, stderr[-2000:]


# `cairn` with the arguments after the first two, which name the moment a stop signal is sent to
# the process by itself and the signal, so the moment is the same on every run.
