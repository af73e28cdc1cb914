"""The record store's wait for SQLite's writer lock, and what a lock still held after it means.

A write waits for the lock SQLite's busy timeout long, then, for a BUSY that SQLite returns
without waiting (a log being recovered), a while more. A lock held past that (another process's
long transaction, or one stuck) raised SQLite's raw "database is locked", which the surfaces
answered as a 500: it is `Unavailable`, a 503 with Retry-After that changed nothing. The job
store's writes (sqlite_threads.py, no further wait) end the same way.
"""

from __future__ import annotations

import random
import sqlite3
import time

from cairn.domain.errors import Unavailable


def begin_immediate(conn: sqlite3.Connection, retry_s: float, *, retry_after_s: float) -> None:
    """BEGIN IMMEDIATE, tried again for `retry_s` past the connection's own busy timeout."""
    started = time.monotonic()
    delay = 0.001
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not held(exc):
                raise
            if time.monotonic() - started > retry_s:
                raise unavailable(time.monotonic() - started, retry_after_s=retry_after_s) from exc
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.1)


def held(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds the lock it needs."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # primary code of an extended one
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def unavailable(waited_s: float, *, retry_after_s: float, store: str = "the record store") -> Unavailable:
    return Unavailable(
        f"{store} was kept busy by another writer for over {waited_s:.0f} s (another Cairn "
        "process on this data directory: an import, an erasure, a worker, or one that is stuck); "
        "nothing was changed: try again",
        retry_after_s=max(1, int(retry_after_s)),
    )
