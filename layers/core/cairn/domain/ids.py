"""Opaque, time-ordered identifiers with a type prefix (`doc_…`, `brn_…`)."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lowercase


def _encode(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


_lock = threading.Lock()
_last = (0, 0)  # (millis, random part) of the newest id


def new_id(prefix: str) -> str:
    """A ULID-like id: 48-bit millisecond time + 80 random bits, sortable by creation.

    Monotonic within a process: an id made in the same millisecond as the one before (or while
    the clock steps back) takes the previous random part plus one, so id order is creation order
    and listings in id order (brains) list oldest first."""
    global _last
    with _lock:
        millis = max(time.time_ns() // 1_000_000, _last[0])
        if millis == _last[0]:  # no fresh randomness needed (a burst of links: most ids)
            rand = _last[1] + 1
            if rand >= 1 << 80:  # 2^80 ids in one millisecond: borrow the next one
                millis, rand = millis + 1, 0
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last = (millis, rand)
    return f"{prefix}_{_encode(millis, 10)}{_encode(rand, 16)}"
