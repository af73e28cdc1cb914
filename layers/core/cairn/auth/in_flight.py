"""Requests one principal has running at once on the embedded server.

Every synchronous route and tool runs on one shared pool of worker threads (anyio's, 40), so one
key sending 40 slow calls at once delayed every other caller's requests, and `/healthz`, by as
long as the slowest took. Past `most` requests of its own still running, a principal's next is
refused (429, Retry-After) before it takes a thread; the rate limit (rate_limit.py) bounds how
many it starts a second, this how many it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from cairn.auth.principal import Principal

DEFAULT_MOST = 16
"""Per principal when CAIRN_MAX_IN_FLIGHT is unset: under half the worker threads."""


class InFlight:
    def __init__(self, most: int, *, counts_open: bool = False) -> None:
        """`counts_open`: the open loopback owner's requests are counted too."""
        if most < 1:
            raise ValueError("most must be at least 1")
        self.most = most
        self.counts_open = counts_open
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def entered(self, principal: Principal) -> Iterator[bool]:
        """Whether the request may run (counted while it does); False past `most` running."""
        key = principal.key
        with self._lock:
            running = self._running.get(key, 0)
            if running >= self.most:
                allowed = False
            else:
                self._running[key] = running + 1
                allowed = True
        try:
            yield allowed
        finally:
            if allowed:
                with self._lock:
                    left = self._running[key] - 1
                    if left:
                        self._running[key] = left
                    else:
                        del self._running[key]  # bounded by what is running, not by who ever ran

    def __len__(self) -> int:
        """Principals with a request running."""
        with self._lock:
            return len(self._running)
