"""`cairn mcp` and `cairn serve` stopped by a signal stop as cleanly as when their input closes: the
job running there is handed back to the queue (not left claimed until its lease runs out), the reads
the session's searches counted in memory are written, and the exit status is a normal one.

MCP clients send SIGTERM two seconds after closing a stdio server's input, some at once; Python's
default for it ended `cairn mcp` where it stood, and uvicorn ended `cairn serve` by raising SIGTERM
again once it had shut down, before the server's own clean stop."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from tests.support.processes import CAIRN, Server, environment, free_port, start
from tests.support.soundness import opened
from tests.support.stopping import StdioSession

pytestmark = pytest.mark.integration
WAIT_S = 60.0
EXIT_S = 30.0
QUEUED = {"CAIRN_INGEST_QUEUE_BYTES": "0"}  # every file ingest is a job
QUESTION = "when is the boiler serviced"
SEARCHES = 3
EMBEDDING_S = 2.0  # by then the running ingest has chunked its file and is embedding it


def long_file(folder: Path) -> Path:
    """A file whose ingest job is still embedding when the signal comes (tens of seconds here)."""
    path = folder / "rota.md"
    sections = (
        f"## Berth {i}\n\nThe harbour crane rota {i} names who lifts cargo on day {i % 7}."
        for i in range(20_000)
    )
    path.write_text("\n\n".join(sections), encoding="utf-8")
    return path


def wordy_file(folder: Path) -> Path:
    """A file of long sections: each embedding run of its ingest takes the model a while, so the
    handler is inside the model most of the time."""
    path = folder / "log.md"
    words = " ".join(f"crane{i} lifted cargo{i % 13} at berth{i % 7} before noon" for i in range(40))
    path.write_text("\n\n".join(f"## Day {i}\n\n{words} day{i}." for i in range(1_500)), encoding="utf-8")
    return path


def job_row(data: Path, job_id: str) -> dict[str, Any]:
    with closing(sqlite3.connect(data / "jobs.sqlite3")) as db:
        db.row_factory = sqlite3.Row
        row = db.execute(
            "SELECT status, attempts, handed_over, lease_until FROM jobs WHERE id = ?", (job_id,)
        ).fetchone()
    assert row is not None, job_id
    return dict(row)


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


def assert_reads_counted(data: Path, path: str) -> None:
    container = opened(data)
    brain = container.brains.get("home")
    doc = container.documents.get(brain, path)
    assert container.search.access is not None
    assert container.search.access.get_many(brain.id, [doc.id])[doc.id].count == SEARCHES


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


def served_tool(server: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool call to `cairn serve`, which must not fail."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = httpx.post(f"{server.base}/mcp", headers=headers, json=call, timeout=WAIT_S).json()
    assert not answer["result"].get("isError"), answer
    structured: dict[str, Any] = answer["result"]["structuredContent"]
    return structured


def remember_and_search(server: Server) -> str:
    """A memory found by SEARCHES searches, whose reads `cairn serve` counts in memory; its path."""
    served_tool(server, "memory_create_brain", {"name": "Home", "slug": "home"})
    path: str = served_tool(
        server, "memory_remember", {"content": "The boiler service is due in March.", "brain": "home"}
    )["path"]
    for _ in range(SEARCHES):
        assert path in json.dumps(served_tool(server, "memory_search", {"query": QUESTION, "brain": "home"}))
    return path


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


SIGNALLED_WHILE_HANDLING = """
import signal, sys, threading
from cairn.entrypoints.cli import main

install, depth, nested = signal.signal, 0, 0


def again(frame, event, arg):  # each call the handling of a SIGTERM makes meets the next one
    if event == "call" and depth == 1:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)


def signalled_while_handling(sig, handler):
    if sig != signal.SIGTERM or not callable(handler):
        return install(sig, handler)

    def handling(signum, frame):
        global depth, nested
        nested += depth > 0
        depth += 1
        outer = sys.gettrace()
        sys.settrace(again)
        try:
            handler(signum, frame)
        finally:
            sys.settrace(outer)
            depth -= 1

    return install(sig, handling)


signal.signal = signalled_while_handling
try:
    code = main(sys.argv[1:])
finally:
    print(f"signals handled inside the handling of another: {nested}", flush=True)
sys.exit(code)
"""


def stopped_by_sigterm(tmp_path: Path, script: str) -> tuple[int, str, str]:
    """`cairn serve` run by `script` (a wrapper sending its own signals), a memory remembered and
    searched, then one SIGTERM: its exit code, its log and the memory's path."""
    server = start(tmp_path / "data", command=(sys.executable, "-c", script))
    try:
        path = remember_and_search(server)
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=EXIT_S)
    finally:
        server.kill()
    log = (tmp_path / f"serve-{server.base.rsplit(':', 1)[1]}.log").read_text(encoding="utf-8")
    return code, log, path


def test_cairn_serve_stops_when_a_signal_comes_while_the_last_one_is_handled(tmp_path: Path) -> None:
    """`pkill -f` matching both `timeout` and the `cairn serve` it runs signals the server, and
    `timeout` passes its own SIGTERM on: two or three within microseconds. A signal handler runs
    on the main thread between any two steps, its own included, and one that came while the
    first one's handler was setting the stop flag waited for ever on the lock the flag's `set`
    held: the server stopped at no later signal either, only at SIGKILL. Here every call the
    handling of the SIGTERM makes is met by another; the server still stops as after two (at
    once, not waiting for calls in flight) and still writes the reads its searches counted."""
    data = tmp_path / "data"
    code, log, path = stopped_by_sigterm(tmp_path, SIGNALLED_WHILE_HANDLING)
    assert code == 0, log[-2000:]
    nested = re.search(r"signals handled inside the handling of another: (\d+)", log)
    assert nested is not None and int(nested[1]) >= 2, log[-2000:]  # the SIGTERMs did meet
    assert_reads_counted(data, path)


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


FORCED = """
import signal, sys, uvicorn
from cairn.entrypoints.cli import main

handle, sent = uvicorn.Server.handle_exit, []


def and_again(self, sig, frame):  # a second signal while the first one is handled
    handle(self, sig, frame)
    if not sent:
        sent.append(sig)
        signal.raise_signal(sig)


uvicorn.Server.handle_exit = and_again
sys.exit(main(sys.argv[1:]))
"""


def test_a_forced_stop_of_cairn_serve_logs_one_line_and_no_traceback(tmp_path: Path) -> None:
    """A second signal stops `cairn serve` without waiting for calls in flight; uvicorn then skips
    the app's shutdown step, and the lifespan task left waiting for it was cancelled as the loop
    closed: an ERROR with a CancelledError traceback, for a stop that lost nothing."""
    data = tmp_path / "data"
    code, log, path = stopped_by_sigterm(tmp_path, FORCED)
    assert code == 0, log[-2000:]
    assert log.count("stopping at once (a second signal)") == 1, log[-2000:]
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
    assert_reads_counted(data, path)


CTRL_C_LATE = """
import atexit, signal, sys, uvicorn
from cairn.entrypoints.cli import main

if sys.argv[1] == "after-uvicorn":
    serve = uvicorn.Server.serve

    async def serve_then_ctrl_c(self, sockets=None):  # uvicorn has given its handlers back
        await serve(self, sockets)
        signal.raise_signal(signal.SIGINT)

    uvicorn.Server.serve = serve_then_ctrl_c
else:  # as the interpreter exits: it waits there for a handed-back job's thread
    atexit.register(signal.raise_signal, signal.SIGINT)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("moment", ["after-uvicorn", "at-exit"])
def test_ctrl_c_late_in_the_stop_of_cairn_serve_ends_it_with_130_and_no_traceback(
    tmp_path: Path, moment: str
) -> None:
    """A Ctrl+C after the signal that stopped `cairn serve` went to asyncio's handler just after
    uvicorn gave the handlers back (the KeyboardInterrupt it raised ended some runs in an abort,
    "terminate called without an active exception", exit -6), or to Python's default as the
    interpreter exits (a KeyboardInterrupt traceback, exit 0). It now ends the process at once,
    with Ctrl+C's status, as a second signal during the clean stop does."""
    server = start(tmp_path / "data", command=(sys.executable, "-c", CTRL_C_LATE, moment))
    try:
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=EXIT_S)
    finally:
        server.kill()
    log = (tmp_path / f"serve-{server.base.rsplit(':', 1)[1]}.log").read_text(encoding="utf-8")
    assert code == 130, log[-2000:]
    assert "KeyboardInterrupt" not in log and "Traceback" not in log, log[-2000:]
