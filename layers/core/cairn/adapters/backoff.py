"""Waiting between attempts at a remote model: exponential backoff with jitter, or the server's word."""

from __future__ import annotations

import random


def backoff_delay(attempt: int, base_s: float, cap_s: float) -> float:
    """Attempt n (from 0) waits base_s * 2**n * U(0.5, 1.5), at most cap_s."""
    return min(base_s * 2**attempt * (0.5 + random.random()), cap_s)


def retry_delay(attempt: int, retry_after: float | None, base_s: float, cap_s: float) -> float | None:
    """The server's Retry-After when it gave one (None, give up, when it asks for more than cap_s);
    otherwise backoff_delay."""
    if retry_after is not None:
        return retry_after if retry_after <= cap_s else None
    return backoff_delay(attempt, base_s, cap_s)
