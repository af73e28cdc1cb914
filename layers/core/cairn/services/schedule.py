"""Consolidation on a schedule: `cairn serve` queues a pass for every brain every `every_s` seconds.

Each window of `every_s` seconds has one idempotency key per brain, so a restart inside a window,
or two servers sharing a data directory, never queue the same pass twice.
"""

from __future__ import annotations

import logging
import threading

from cairn.ports.clock import Clock
from cairn.services.brains import BrainService
from cairn.services.consolidation import ConsolidationService

log = logging.getLogger(__name__)


class ConsolidationSchedule:
    def __init__(
        self, brains: BrainService, consolidation: ConsolidationService, clock: Clock, every_s: float
    ) -> None:
        if every_s <= 0:
            raise ValueError("every_s must be positive")
        self.brains = brains
        self.consolidation = consolidation
        self.clock = clock
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> list[str]:
        """Queue this window's pass for every brain; returns the job ids (existing ones included)."""
        window = int(self.clock.now().timestamp() // self.every_s)
        return [
            self.consolidation.queue(brain, idempotency_key=f"consolidate:{brain.id}:{window}").id
            for brain in self.brains.list()
        ]

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="cairn-consolidation-schedule", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # a failed tick must not end the schedule
                log.exception("scheduled consolidation could not be queued")
            self._stop.wait(self.every_s)
