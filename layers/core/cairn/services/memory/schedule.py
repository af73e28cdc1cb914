"""Consolidation on a schedule: `cairn serve` queues a pass for every brain every `every_s` seconds.

Each window of `every_s` seconds has one idempotency key per brain, so a restart inside a window,
or two servers sharing a data directory, never queue the same pass twice.

On AWS an EventBridge rule ticks instead, and `window_for` derives the window from its schedule
expression. For `rate(N unit)` the window is half the period: a rate schedule's ticks keep the
phase of the rule's creation, not of the epoch, so a window as long as the period could put two
ticks whose delivery jitters around a window boundary into one window and skip a pass, for good;
with half, ticks a period apart never share a window, while a redelivered tick (seconds to
minutes later) almost always does. A `cron(...)` expression ticks on the wall clock, which the
epoch-aligned windows follow; its period is not derived: the window is CRON_WINDOW_S (one hour),
so a cron firing more often than hourly queues one pass an hour (`CAIRN_CONSOLIDATE_EVERY_S` sets
the window explicitly).
"""

from __future__ import annotations

import re

from cairn.ports.clock import Clock
from cairn.services.brains import BrainService
from cairn.services.jobs.periodic import Periodic
from cairn.services.memory.consolidation import ConsolidationService

CRON_WINDOW_S = 3600.0
_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|hour|day)s?\s*\)$")


def window_for(expression: str) -> float:
    """The idempotency window in seconds for an EventBridge schedule expression."""
    text = expression.strip()
    rate = _RATE.fullmatch(text)
    if rate and int(rate[1]) > 0:
        return int(rate[1]) * _UNITS[rate[2]] / 2
    if text.startswith("cron(") and text.endswith(")"):
        return CRON_WINDOW_S
    raise ValueError(f"not an EventBridge schedule expression: {expression!r}")


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
        self._loop = Periodic(
            "cairn-consolidation-schedule",
            every_s,
            self.tick,
            first_at_once=True,
            failure="scheduled consolidation could not be queued",
        )

    def tick(self) -> list[str]:
        """Queue this window's pass for every brain; returns the job ids (existing ones included)."""
        window = int(self.clock.now().timestamp() // self.every_s)
        queued = []
        for brain in self.brains.list():
            if self._loop.stopping():  # the rest are queued by the next start's first tick
                break
            queued.append(
                self.consolidation.queue(brain, idempotency_key=f"consolidate:{brain.id}:{window}").id
            )
        return queued

    def start(self) -> None:
        self._loop.start()

    def stop(self, within_s: float | None = None) -> bool:
        """Ask the schedule to stop and wait up to `within_s` (None: until it has); whether it has."""
        return self._loop.stop(within_s)
