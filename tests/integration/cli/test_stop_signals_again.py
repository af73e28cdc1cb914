"""`cairn serve` stopped by one signal, then met by more: signals that come while the last one is
handled (`pkill -f` on a server run under `timeout`), a second one that stops it at once, and a
Ctrl+C late in its stop. Each ends the process with a normal status, one line and no traceback,
and what its searches counted is still written where the stop got that far."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import pytest

from tests.support.processes import start
from tests.support.signal_stops import (
    EXIT_S,
    assert_reads_counted,
    remember_and_search,
)

pytestmark = pytest.mark.integration


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
