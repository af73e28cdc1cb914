"""Per-principal token buckets for the embedded server (API Gateway throttles in AWS), and
per-address buckets of refused credentials (FailedSignIns).

Each key has a bucket of `burst` tokens that refills continuously at `rate_per_s`; a request
takes `cost` tokens or is refused with the seconds until it could succeed (the `Retry-After`).
Memory is bounded: past `max_keys` buckets the least recently used is dropped, which only ever
errs towards allowing (a dropped key comes back with a full bucket).
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from cairn.auth.principal import Principal

DEFAULT_RATE_PER_S = 50.0
"""Per authenticated principal when CAIRN_RATE_LIMIT_PER_S is unset."""

# Float refill arithmetic can land a hair under a whole token after waiting exactly Retry-After.
_EPSILON = 1e-9


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        if math.isnan(rate_per_s):
            raise ValueError("rate_per_s must be a number (<= 0 means unlimited)")
        self.unlimited = rate_per_s <= 0 or math.isinf(rate_per_s)
        if not self.unlimited and burst < 1:
            raise ValueError("burst must be at least 1")
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.rate = rate_per_s
        self.burst = burst
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, cost: float = 1.0) -> float | None:
        """None when allowed (the tokens are taken); otherwise seconds until it would be allowed."""
        if self.unlimited:
            return None
        if not 0 < cost <= self.burst:
            raise ValueError(f"cost must be in (0, {self.burst}]: a bigger cost could never be allowed")
        with self._lock:
            bucket = self._refilled(key)
            if bucket.tokens + _EPSILON >= cost:
                bucket.tokens = max(0.0, bucket.tokens - cost)
                return None
            return (cost - bucket.tokens) / self.rate

    def give_back(self, key: str, cost: float = 1.0) -> None:
        """Return tokens a take held for what turned out not to count (never past the burst)."""
        if self.unlimited:
            return
        with self._lock:
            bucket = self._refilled(key)
            bucket.tokens = min(self.burst, bucket.tokens + cost)

    def empty_for(self, key: str) -> float | None:
        """None when `key` has a whole token; otherwise seconds until it has one. Takes nothing."""
        if self.unlimited:
            return None
        with self._lock:
            bucket = self._refilled(key)
            return None if bucket.tokens + _EPSILON >= 1.0 else (1.0 - bucket.tokens) / self.rate

    def refusal_s(self, principal: Principal) -> int | None:
        """A request of `principal` takes from its bucket: None when allowed, otherwise the whole
        seconds (at least one) its `Retry-After` says. Every path a principal's requests take (an
        API call, a web UI sign-in) is counted in the same bucket."""
        wait = self.take(principal.key)
        return None if wait is None else max(1, math.ceil(wait))

    def __len__(self) -> int:
        """Buckets held (bounded by max_keys)."""
        with self._lock:
            return len(self._buckets)

    def _refilled(self, key: str) -> _Bucket:
        now = self._clock()
        bucket = self._touch(key, now)
        bucket.tokens = min(self.burst, bucket.tokens + max(0.0, now - bucket.updated) * self.rate)
        bucket.updated = now
        return bucket

    def _touch(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is not None:
            self._buckets.move_to_end(key)
            return bucket
        bucket = self._buckets[key] = _Bucket(tokens=float(self.burst), updated=now)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return bucket


TOO_MANY_REFUSED = "too many refused credentials from this address"


class FailedSignIns:
    """Refused credentials per client address. An address may have `burst` credentials refused,
    and one more each `60 / per_min` seconds after that; past them, what it sends is not checked
    at all until its bucket refills (429 with Retry-After), so a guess that would be right is
    refused too and tells the guesser nothing. What an address sends that is accepted, or no
    credential at all, takes nothing. Keyed by the address the server sees (behind a proxy,
    uvicorn's forwarded address from a trusted one), an IPv6 one by its network (`source_key`)."""

    def __init__(
        self,
        per_min: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        self.per_min = per_min
        self.burst = burst
        self._buckets = RateLimiter(per_min / 60.0, burst, clock=clock, max_keys=max_keys)

    def blocked_s(self, address: str) -> int | None:
        """None when `address` may try a credential; otherwise the whole seconds (at least one)
        its `Retry-After` says."""
        wait = self._buckets.empty_for(source_key(address))
        return None if wait is None else max(1, math.ceil(wait))

    def refused(self, address: str) -> None:
        """A credential `address` sent was refused."""
        self._buckets.take(source_key(address))

    def attempt(self, address: str) -> int | None:
        """Hold one refusal for a credential about to be checked, as `blocked_s` says: None when
        held (`returned` gives it back if the credential is not refused as a guess), else the
        Retry-After. For checks that may run at once (threads): each holds its place before it
        looks, so no number of them at once passes more than the bucket holds."""
        wait = self._buckets.take(source_key(address))
        return None if wait is None else max(1, math.ceil(wait))

    def returned(self, address: str) -> None:
        """The credential an `attempt` held a place for was not a refused guess."""
        self._buckets.give_back(source_key(address))


def source_key(source: str) -> str:
    """Whose count a source address goes to: an IPv4 address its own (also written as IPv6), an
    IPv6 address its /64 network, which one subscriber is handed whole (else each of its 2^64
    addresses would bring a fresh budget); anything else, as it is written. Refused credentials
    (FailedSignIns) and client registrations (auth/oauth/throttle.py) count by it."""
    try:
        ip = ipaddress.ip_address(source)
    except ValueError:
        return source
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)
