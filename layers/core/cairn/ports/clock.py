"""Clock: the current time, injectable so tests control it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Timezone-aware UTC now."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
