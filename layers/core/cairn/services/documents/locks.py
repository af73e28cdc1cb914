"""Striped per-key locks: writers of the same document path serialise in-process.

The locks are not re-entrant, and two keys may share a stripe: work a holder's change sets off that
takes locks of its own (a change event's listener writing another document) waits, through
`after_release`, until this thread holds none of them."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager


class KeyedLocks:
    def __init__(self, stripes: int = 256) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]
        self._held = threading.local()

    def _index(self, key: str) -> int:
        return zlib.crc32(key.encode()) % len(self._locks)

    @contextmanager
    def hold(self, keys: Iterable[str]) -> Iterator[None]:
        """Acquire the locks of every key in a global order (no deadlock between multi-key holders)."""
        indexes = sorted({self._index(k) for k in keys})
        acquired: list[threading.Lock] = []
        depth = getattr(self._held, "depth", 0)
        self._held.depth = depth + 1
        try:
            for i in indexes:
                self._locks[i].acquire()
                acquired.append(self._locks[i])
            yield
        finally:
            for lock in reversed(acquired):
                lock.release()
            self._held.depth = depth
            if depth == 0:
                self._run_deferred()

    def after_release(self, work: Callable[[], None]) -> None:
        """Run `work` once this thread holds none of these locks: now, if it holds none."""
        if getattr(self._held, "depth", 0) == 0:
            work()
            return
        if not hasattr(self._held, "deferred"):
            self._held.deferred = []
        self._held.deferred.append(work)

    def _run_deferred(self) -> None:
        while deferred := getattr(self._held, "deferred", None):
            self._held.deferred = []
            for work in deferred:
                work()
