"""The clean stop of `cairn serve` and `cairn mcp`, bounded: a process manager kills a process
still running 30 s after SIGTERM (systemd's TimeoutStopSec, uvicorn's own manager, Docker's 10 s
is shorter and set by `stop_grace_period`), so the whole stop, from the first signal to the exit,
shares one budget, STOP_WITHIN_S.

The background work is asked to stop first, all at once, so it winds down while the rest runs:
the index sweeper ends at its next document or step, the consolidation schedule before its next
brain, the index repair after the document it indexes. Then the reads searches counted are
written, the audit entries a busy store refused are spilled and written, and the job worker hands
back what still runs after its grace. Each wait takes what is left of the budget, no more. What
did not end in time is left to the next start, which finishes it: the intents and link marks the
sweep did not reach (a start settles every standing one first), the brains the repair did not
reach (compared again), jobs not handed back (run again after their lease), audit entries kept in
the spill.

Once nothing runs in the stores (no call in flight, no job handler, no background thread), the
reads counted since are written (the MCP calls a stdio session's end or the server's shutdown
cut short are among the work waited for, their audit entries kept by then spilled too) and the
stores are closed (bootstrap/closing.py): the chunk index's maintenance worker
is stopped at its next step instead of killed at the exit, and each SQLite file's write-ahead log
is checkpointed. When something still runs, the process leaves without closing them
(entrypoints/cli/leaving.py): a SQLite connection closed under a statement can crash the process,
and SQLite recovers the files at the next open as after any crash, with nothing acknowledged lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cairn.bootstrap.closing import close_stores, write_read_counts

if TYPE_CHECKING:
    from cairn.container import Container

log = logging.getLogger("cairn.stop")

STOP_WITHIN_S = 25.0
"""From the stop signal to the exit: under the 30 s a process manager allows, with room for the
interpreter's own exit."""

CALLS_IN_FLIGHT_S = 15
"""How long `cairn serve` waits for the calls in flight to be answered (uvicorn's graceful
shutdown), out of STOP_WITHIN_S; the calls still running then are cancelled."""


class Stoppable:
    """Background work the stop asks to end and waits for: `stop(within_s)` asks (0: only asks)
    and says whether it has ended."""

    def __init__(self, name: str, stop: Callable[[float], bool]) -> None:
        self.name = name
        self.stop = stop


def thread_ends(name: str, thread: threading.Thread | None) -> Stoppable:
    """A thread that ends by itself (the warm-up, an erasure resumed): only waited for."""

    def wait(within_s: float) -> bool:
        if thread is None:
            return True
        thread.join(within_s)
        return not thread.is_alive()

    return Stoppable(name, wait)


def clean_stop(
    container: Container,
    deadline: float,
    background: Sequence[Stoppable],
    *,
    close: bool = True,
) -> bool:
    """Stop within `deadline` (time.monotonic()), closing the stores when `close` and nothing
    runs in them; whether everything ended (else the process must `leave`: a thread may be inside
    native code)."""
    ended: list[bool] = []
    stopping = threading.Thread(
        target=_steps,
        args=(container, deadline, background, close, ended),
        name="cairn-stop",
        daemon=True,
    )
    stopping.start()
    stopping.join(max(0.0, deadline - time.monotonic()))
    if stopping.is_alive():
        log.warning(
            "the clean stop did not end within %g s of the signal: what it had not done is left to "
            "the next start",
            STOP_WITHIN_S,
        )
        return False
    return bool(ended)


def _steps(
    container: Container,
    deadline: float,
    background: Sequence[Stoppable],
    close: bool,
    ended: list[bool],
) -> None:
    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    for work in background:
        work.stop(0.0)
    write_read_counts(container, "at the stop")
    container.audit.close()  # entries a busy store refused: written, or kept for the next start
    container.jobs.stop_worker()
    running = [work.name for work in background if not work.stop(left())]
    # what the work waited for recorded meanwhile (a cut-short call's erasure) and the busy store
    # refused: the close above had been and gone, so it was lost with the process
    container.audit.close()
    if running:
        log.warning("stopping with %s still running: left to the next start", ", ".join(running))
    if running or container.jobs.running_here():
        return
    if close:
        write_read_counts(container, "at the stop")  # those of the calls waited for (stdio's, cut short)
        close_stores(container)
    ended.append(True)
