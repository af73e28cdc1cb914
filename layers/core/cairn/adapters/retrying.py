"""Trying a remote model again: the one retry loop and backoff every model adapter uses.

An adapter's attempt raises `Transient(error, retry_after)` for a failure worth another try after
a pause (throttling, a server error, a connection that never got going) and raises anything else
at once. `retrying` waits the server's Retry-After when it gave one (giving up when it asks for
more than `max_wait_s`), otherwise exponential backoff with jitter, and after `max_retries` more
attempts raises the last error. The error is raised outside the except block, so it carries no
context chain back to the HTTP or AWS library, whose exceptions hold the request and its keys.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


def backoff_delay(attempt: int, base_s: float, cap_s: float) -> float:
    """Attempt n (from 0) waits base_s * 2**n * U(0.5, 1.5), at most cap_s."""
    return min(base_s * 2**attempt * (0.5 + random.random()), cap_s)


class Transient(Exception):
    """A failed attempt worth repeating after a pause; `error` is what the caller sees if none is left."""

    def __init__(self, error: Exception, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait; `sleep` is used by `retrying` (async adapters sleep themselves)."""

    max_retries: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 20.0
    sleep: Callable[[float], Any] = field(default=time.sleep)

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """The pause before attempt `attempt + 1` (attempts count from 0), or None: give up."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait_s else None
        return backoff_delay(attempt, self.backoff_s, self.max_wait_s)


def retrying(attempt: Callable[[], T], policy: RetryPolicy, log: logging.Logger | None = None) -> T:
    """`attempt()`, tried again while it raises Transient and the policy allows."""
    tries = 0
    while True:
        try:
            return attempt()
        except Transient as exc:
            failure = exc
        delay = policy.delay(tries, failure.retry_after)
        if delay is None:
            raise failure.error
        if log is not None:
            log.info("%s; retrying in %.2f s", failure.error, delay)
        policy.sleep(delay)
        tries += 1
