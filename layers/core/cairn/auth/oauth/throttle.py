"""Registrations per source address per hour, counted in the records (`oauthregister` /
`source#<hash>`) so every Lambda container counts against the same window. The address itself is
never stored: only a SHA-256 of it. An IPv6 address counts by its /64, the block one host or home
network is handed, so cycling through its addresses does not multiply the rate.

CapLease serializes the few steps that take a place under the cap of live clients, across Lambda
containers as well (registration.py)."""

from __future__ import annotations

import hashlib
import math
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from cairn.auth.rate_limit import source_key
from cairn.domain.errors import Conflict, Unavailable
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore

THROTTLE_PK = "oauthregister"
WINDOW_S = 3600
LEASE_SK = "cap-lease"
LEASE_S = 60
"""A lease left by a process that died while holding it lapses after this long."""


class RegistrationThrottle:
    def __init__(self, records: RecordStore, clock: Clock, per_hour: int) -> None:
        self.records, self.clock, self.per_hour = records, clock, per_hour

    def take(self, source: str) -> int | None:
        """None when `source` may register now (counted); else the seconds until it may."""
        if self.per_hour <= 0:
            return None
        sk = "source#" + hashlib.sha256(source_key(source).encode()).hexdigest()[:32]
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


class CapLease:
    """One registration at a time may check the cap and take a place under it, in every process."""

    def __init__(
        self,
        records: RecordStore,
        clock: Clock,
        *,
        wait_s: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.records, self.clock = records, clock
        self.wait_s, self.sleep, self.monotonic = wait_s, sleep, monotonic

    @contextmanager
    def held(self) -> Iterator[None]:
        token = secrets.token_hex(8)
        give_up = self.monotonic() + self.wait_s
        while not self._take(token):
            if self.monotonic() >= give_up:
                raise Unavailable("other client registrations are in progress: try again", retry_after_s=5)
            self.sleep(0.05)
        try:
            yield
        finally:
            self._give_back(token)

    def _take(self, token: str) -> bool:
        now = self.clock.now().timestamp()
        item = self.records.get(THROTTLE_PK, LEASE_SK)
        if item is not None and float(item.data.get("until", 0)) > now:
            return False
        try:
            lease = Item(THROTTLE_PK, LEASE_SK, {"token": token, "until": now + LEASE_S})
            self.records.put(lease, item.version if item is not None else 0)
        except Conflict:
            return False
        return True

    def _give_back(self, token: str) -> None:
        item = self.records.get(THROTTLE_PK, LEASE_SK)
        if item is None or item.data.get("token") != token:
            return  # it lapsed and another registration holds it now
        with suppress(Conflict):
            self.records.put(Item(THROTTLE_PK, LEASE_SK, {"token": "", "until": 0}), item.version)
