"""StoreGate: a store's calls in flight counted, so that it is closed only once none is inside it.

A SQLite connection closed under a running statement can crash the process, and a job handler may
outlive the wait for it (JobEngine.close): after `close`, `open` answers False and the caller
leaves the store alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StoreGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._inside = 0
        self._closed = False

    @contextmanager
    def open(self) -> Iterator[bool]:
        """Whether the store is open, kept open until the block ends."""
        with self._cond:
            is_open = not self._closed
            self._inside += is_open
        try:
            yield is_open
        finally:
            if is_open:
                with self._cond:
                    self._inside -= 1
                    if not self._inside:
                        self._cond.notify_all()

    def close(self) -> bool:
        """Let no call in, wait for those inside (each one statement, within SQLite's busy
        timeout); False if it was closed already."""
        with self._cond:
            if self._closed:
                return False
            self._closed = True
            while self._inside:
                self._cond.wait()
            return True
