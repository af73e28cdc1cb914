"""Opaque, time-ordered identifiers with a type prefix (`doc_…`, `brn_…`)."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lowercase
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # ten bits -> two characters
_MILLIS_BITS = 50  # 10 characters
_RANDOM_BITS = 80  # 16 characters
_SHIFTS = tuple(range(_MILLIS_BITS + _RANDOM_BITS - 10, -1, -10))


def _encode(millis: int, rand: int) -> str:
    """The 26 characters of an id: the low 50 bits of `millis` then `rand`, five bits each, most
    significant first (ten bits a lookup: ids are made by the ten thousand in an ingest)."""
    value = (millis & ((1 << _MILLIS_BITS) - 1)) << _RANDOM_BITS | rand
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


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
            if rand >= 1 << _RANDOM_BITS:  # 2^80 ids in one millisecond: borrow the next one
                millis, rand = millis + 1, 0
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last = (millis, rand)
    return f"{prefix}_{_encode(millis, rand)}"


def first_id_since(prefix: str, seconds_ago: float) -> str:
    """An id below every id `new_id(prefix)` made in the last `seconds_ago` seconds (and above
    those made before), by this machine's clock, as `new_id` reads it: where a listing in id
    order of what was made since then starts (after it)."""
    millis = max(0, time.time_ns() // 1_000_000 - int(seconds_ago * 1000))
    return f"{prefix}_{_encode(millis, 0)}"
