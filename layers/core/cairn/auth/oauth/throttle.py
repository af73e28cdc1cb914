"""Registrations per source address per hour, counted in the records (`oauthregister` /
`source#<hash>`) so every Lambda container counts against the same window. The address itself is
never stored: only a SHA-256 of it."""

from __future__ import annotations

import hashlib
import math

from cairn.domain.errors import Conflict
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore

THROTTLE_PK = "oauthregister"
WINDOW_S = 3600


class RegistrationThrottle:
    def __init__(self, records: RecordStore, clock: Clock, per_hour: int) -> None:
        self.records, self.clock, self.per_hour = records, clock, per_hour

    def take(self, source: str) -> int | None:
        """None when `source` may register now (counted); else the seconds until it may."""
        if self.per_hour <= 0:
            return None
        sk = "source#" + hashlib.sha256(source.encode()).hexdigest()[:32]
        for _ in range(5):
            now = self.clock.now().timestamp()
            item = self.records.get(THROTTLE_PK, sk)
            start = float(item.data.get("window_start", 0)) if item is not None else 0.0
            count = int(item.data.get("count", 0)) if item is not None else 0
            if now - start >= WINDOW_S:
                start, count = now, 0
            if count >= self.per_hour:
                return max(1, math.ceil(start + WINDOW_S - now))
            data = {"window_start": start, "count": count + 1}
            try:
                self.records.put(Item(THROTTLE_PK, sk, data), item.version if item is not None else 0)
            except Conflict:
                continue  # another registration from the same address counted first: read again
            return None
        return 1
