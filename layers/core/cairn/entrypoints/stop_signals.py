"""The stop signals of `cairn serve` and `cairn mcp`, handled by one handler from the process's
first step to its last.

Python's defaults (SIGTERM and SIGHUP end the process where it stands, SIGINT raises
KeyboardInterrupt wherever it lands) and the handlers uvicorn and asyncio install for a while
each left windows: a signal while the store opened and the model loaded killed the process; one
after the job worker started but before the server took signals left a claimed job leased, as a
crash does; a Ctrl+C just after uvicorn gave the handlers back went to asyncio's, and ended in a
traceback. So the handler is installed first and never given back, and what a signal does
follows the process's phase:

- starting (nothing claimed, nothing to hand back): the process exits at once, with the status
  of a clean stop (0, or 130 after Ctrl+C);
- held (the job worker started, the server not yet taking stops): the signals are kept, and given
  to the server as it starts, which then stops at once;
- routed (the server runs): each signal goes to the server's stop (uvicorn's `handle_exit`, the
  stdio session's end);
- stopping (the clean stop runs): the first stop signal changes nothing, as the stop it asks for
  is under way; a later one ends the process at once, exiting 128 + its number, as a shell
  reports a process the signal killed.

The handler runs on the main thread between any two steps, its own included, so it takes no lock
(entrypoints/stopping.py's `Stopping` says what one cost): it writes plain attributes, appends to
a list, and writes to stderr with `os.write`, not through `sys.stderr`, whose buffer has a lock.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from cairn.entrypoints.stopping import present

STOP_SIGNALS = present("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK")
"""The signals that stop `cairn serve` and `cairn mcp` (SIGBREAK is Ctrl+Break), as uvicorn's own
list; those of them the platform has."""

STARTING, HELD, ROUTED, STOPPING = "starting", "held", "routed", "stopping"


class StopSignals:
    """One process's stop signals: install it first, then move it through the phases above."""

    def __init__(self, name: str, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> None:
        self.signals = signals
        self.name = name
        self.received: int | None = None  # the first stop signal
        self.received_at: float | None = None  # its time.monotonic(): the stop's budget runs from it
        self.phase = STARTING
        self._held: list[int] = []
        self._stop: Callable[[int], object] | None = None

    def install(self) -> None:
        """Handle the signals from now on (only the main thread may; elsewhere none come)."""
        if threading.current_thread() is threading.main_thread():
            for sig in self.signals:
                signal.signal(sig, self._handle)

    def hold(self) -> None:
        """From now on something may be claimed: keep the signals for the server to come."""
        self.phase = HELD

    @contextlib.contextmanager
    def routed_to(self, stop: Callable[[int], object]) -> Iterator[None]:
        """Within the block each signal calls `stop(signum)`, those held before first."""
        self._stop = stop
        self.phase = ROUTED  # from here the handler calls `stop` and no longer appends to _held
        held, self._held = self._held, []
        for sig in held:
            stop(sig)
        try:
            yield
        finally:
            self.stopping()

    def stopping(self) -> None:
        """The clean stop has begun: a later signal ends the process at once."""
        self.phase = STOPPING
        self._stop = None

    def exit_code(self) -> int:
        """A clean stop's status: 130 after Ctrl+C (the shell's usual), else 0."""
        return 130 if self.received == signal.SIGINT else 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.received is None
        if first:
            self.received = signum
            self.received_at = time.monotonic()
        phase, stop = self.phase, self._stop
        if phase == STARTING:
            self._say(f"{_name(signum)} while starting: stopping, with nothing to hand back")
            os._exit(self.exit_code())
        elif phase == HELD:
            self._held.append(signum)
        elif phase == ROUTED and stop is not None:
            stop(signum)
        elif not first:
            self._say(f"{_name(signum)} during the clean stop: stopping at once")
            os._exit(128 + signum)

    def _say(self, what: str) -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"{self.name}: {what}\n".encode())


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
