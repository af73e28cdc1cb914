"""Striped per-key locks: writers of the same document path serialise in-process."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class KeyedLocks:
    def __init__(self, stripes: int = 256) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    def _index(self, key: str) -> int:
        return zlib.crc32(key.encode()) % len(self._locks)

    @contextmanager
    def hold(self, keys: Iterable[str]) -> Iterator[None]:
        """Acquire the locks of every key in a global order (no deadlock between multi-key holders)."""
        indexes = sorted({self._index(k) for k in keys})
        acquired: list[threading.Lock] = []
        try:
            for i in indexes:
                self._locks[i].acquire()
                acquired.append(self._locks[i])
            yield
        finally:
            for lock in reversed(acquired):
                lock.release()
