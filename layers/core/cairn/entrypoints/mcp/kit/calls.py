"""The tool calls a surface's handlers are running in worker threads, for a stdio session's end.

When `cairn mcp`'s session ends (stdin closed, a stop signal), the SDK cancels the calls in
flight, but a sync handler's worker thread cannot be cancelled: it runs on, writing to the stores.
The session no longer waits for such a thread (it would, for as long as the call takes: minutes
for a large file's ingest, past the process manager's patience); instead the stop waits for the
threads counted here, within its budget, and closes the stores only once none runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class CallsInFlight:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around a handler's run, on its worker thread."""
        with self._changed:
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def wait(self, within_s: float) -> bool:
        """Wait up to `within_s` for every call to end; whether none runs."""
        with self._changed:
            return self._changed.wait_for(lambda: self._running == 0, timeout=within_s)
