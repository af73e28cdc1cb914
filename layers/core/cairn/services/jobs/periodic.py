"""A daemon thread that runs a tick every so many seconds until stopped (the consolidation
schedule, the index sweeper). A tick that fails is logged; the next one runs as planned."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("cairn.periodic")


class Periodic:
    def __init__(
        self, name: str, every_s: float, tick: Callable[[], object], *, first_at_once: bool, failure: str
    ) -> None:
        self.name = name
        self.every_s = every_s
        self.tick = tick
        self.first_at_once = first_at_once
        self.failure = failure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stopping(self) -> bool:
        """Whether `stop` was asked: a tick under way ends at its next step (the process manager
        kills a process whose stop takes longer than its limit, 30 s by default)."""
        return self._stop.is_set()

    def stop(self, within_s: float | None = None) -> bool:
        """Ask the loop to stop, and wait up to `within_s` for the tick under way to end (None:
        until it has). Whether the thread has ended; a later call waits again."""
        self._stop.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(within_s)
        if thread.is_alive():
            return False
        self._thread = None
        return True

    def _loop(self) -> None:
        if not self.first_at_once and self._stop.wait(self.every_s):
            return
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # a failed tick must not end the loop: the next one retries
                log.exception(self.failure)
            self._stop.wait(self.every_s)
