"""One SQLite connection per thread (WAL), with write and read-snapshot transactions.

With `secure_delete`, connections run with `secure_delete = FAST`: a delete zeroes the deleted
cells in the pages it writes anyway (no extra I/O), so deleted text does not linger beside live
rows; pages freed whole keep their bytes, unless the transaction that frees them zeroes them
(`transaction(zero_freed=True)`, secure_delete ON for its length).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from cairn.adapters.local import writer_lock
from cairn.adapters.local.durable_dirs import storage_errors

if TYPE_CHECKING:
    from cairn.adapters.local.upgrade_wait import OpeningWait

BUSY_TIMEOUT_S = 30.0
_SECURE_DELETE = ("OFF", "ON", "FAST")  # by the value PRAGMA secure_delete reads back


class ThreadConnections:
    def __init__(
        self,
        db_path: Path,
        *,
        secure_delete: bool = False,
        waits: OpeningWait | None = None,
        store: str = "the database",
    ) -> None:
        """`waits`: a write transaction whose wait for the writer lock runs out waits on while
        another process's long transaction shows progress (upgrade_wait.py); without it, it is
        `Unavailable` at once. `store`: what the database is, in that error's message."""
        self.db_path = db_path
        self.store = store
        self.secure_delete = secure_delete
        self._local = threading.local()
        self._conns: dict[int, tuple[threading.Thread, sqlite3.Connection]] = {}
        self._lock = threading.Lock()
        self._waits = waits
        self._opening: OpeningWait | None = None
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.get().execute("PRAGMA journal_mode=WAL")

    def get(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        conn = sqlite3.connect(
            self.db_path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
        )
        conn.execute("PRAGMA synchronous=FULL")  # a commit survives a power loss, not only a crash
        if self.secure_delete:
            conn.execute("PRAGMA secure_delete=FAST")
        with self._lock:
            for ident, (thread, old) in list(self._conns.items()):
                if not thread.is_alive():  # a finished thread never uses its connection again
                    old.close()
                    del self._conns[ident]
            self._conns[threading.get_ident()] = (threading.current_thread(), conn)
        self._local.conn = conn
        return conn

    @contextmanager
    def opening(self, wait: OpeningWait) -> Iterator[None]:
        """Within the block (the opener's migrations and upgrades, before any other thread uses
        this), each transaction waits for another process's upgrade as long as it progresses,
        and shows its own progress to such waiters (upgrade_wait.py)."""
        self._opening = wait
        try:
            yield
        finally:
            self._opening = None

    @contextmanager
    def transaction(self, *, zero_freed: bool = False, long: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction holding SQLite's writer lock from the start; with `zero_freed`,
        every page it frees is overwritten with zeros, not only the cells it deletes. `long` (one
        that may hold the lock for seconds on a big brain: bench/writer_lock_100k.py) shows its
        progress to the other processes waiting for the lock, as an opening's do."""
        conn = self.get()
        restore = None
        if zero_freed:
            restore = _SECURE_DELETE[int(conn.execute("PRAGMA secure_delete").fetchone()[0])]
            conn.execute("PRAGMA secure_delete=ON")
        opening = self._opening
        beats = opening or (self._waits if long else None)
        try:
            with storage_errors():  # a full disk inside (a vector file's append included) or at COMMIT
                if opening is None:
                    self._begin(conn)
                else:
                    opening.begin(conn)
                try:
                    with nullcontext() if beats is None else beats.beating(conn):
                        yield conn
                        conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # a COMMIT that failed on a full disk may have rolled back
                        conn.execute("ROLLBACK")
                    raise
        finally:
            if restore is not None:
                conn.execute(f"PRAGMA secure_delete={restore}")

    def _begin(self, conn: sqlite3.Connection) -> None:
        started = time.monotonic()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not writer_lock.held(exc):
                raise
            if self._waits is None or exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                waited = time.monotonic() - started
                raise writer_lock.unavailable(waited, retry_after_s=BUSY_TIMEOUT_S, store=self.store) from exc
            self._waits.begin(conn, waited=True)

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every statement inside sees the same committed state."""
        conn = self.get()
        with storage_errors():
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for _thread, conn in self._conns.values():
                conn.close()
            self._conns.clear()
        self._local = threading.local()
