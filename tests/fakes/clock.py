"""A deterministic clock: each reading is `tick` later than the one before."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class FakeClock:
    def __init__(self, start: datetime | None = None, tick: timedelta = timedelta(milliseconds=1)) -> None:
        self.current = start or datetime(2026, 1, 1, tzinfo=UTC)
        self.tick = tick
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            self.current += self.tick
            return self.current

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.current += timedelta(seconds=seconds)
