"""The embedded store's ChangeLog (ports/change_log.py): one small SQLite database beside the
records, `changes.sqlite3`, that every process of the data directory appends to.

An entry's number is its AUTOINCREMENT rowid, taken under SQLite's write lock, so a reader that
has seen entry n has seen every entry before it. Entries older than `keep_s` go as new ones come.
The log holds only news: a file that is not a database, or is damaged, is removed and a new one
begun (what it held was at most minutes of change events; each process notices the new file at
its next call), and any other failure is a ChangeLogError the bus logs, never a failed write.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cairn.ports.change_log import ChangeLogError, LoggedChange

KEEP_S = 600.0
PRUNE_EVERY = 256
"""Appends between two prunes of the entries older than `keep_s`."""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, "
    "origin TEXT NOT NULL, brain_id TEXT NOT NULL, payload TEXT NOT NULL)"
)


class SqliteChangeLog:
    def __init__(
        self, path: Path, keep_s: float = KEEP_S, clock: Callable[[], float] = time.time, busy_s: float = 5.0
    ) -> None:
        """`busy_s`: how long a call waits for another process's write or read to let it go."""
        self.path, self.keep_s, self.clock, self.busy_s = path, keep_s, clock, busy_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._inode: int | None = None  # the file the connection has open
        self._appends = 0

    def append(self, origin: str, brain_id: str, payloads: list[str]) -> None:
        if not payloads:
            return
        now = self.clock()
        with self._open() as conn, conn:
            conn.executemany(
                "INSERT INTO changes (at, origin, brain_id, payload) VALUES (?, ?, ?, ?)",
                [(now, origin, brain_id, payload) for payload in payloads],
            )
            self._appends += 1
            if self._appends % PRUNE_EVERY == 0:
                conn.execute("DELETE FROM changes WHERE at < ?", (now - self.keep_s,))

    def mark(self) -> int:
        with self._open() as conn:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])

    def since(self, mark: int, limit: int) -> list[LoggedChange]:
        with self._open() as conn:
            rows = conn.execute(
                "SELECT seq, origin, brain_id, payload FROM changes WHERE seq > ? ORDER BY seq LIMIT ?",
                (mark, limit),
            ).fetchall()
        return [LoggedChange(int(seq), origin, brain_id, payload) for seq, origin, brain_id, payload in rows]

    def forget(self, brain_ids: list[str]) -> None:
        """secure_delete zeroes the deleted cells; the WAL, which still holds the pages as they were,
        is checkpointed and emptied, and free pages go with a VACUUM (a small file)."""
        with self._open() as conn:
            with conn:
                conn.executemany("DELETE FROM changes WHERE brain_id = ?", [(b,) for b in brain_ids])
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if conn.execute("PRAGMA freelist_count").fetchone()[0]:
                conn.execute("VACUUM")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:  # a reader kept the log's pages: the erasure is tried again (services/erasure)
            raise ChangeLogError(f"change log {self.path.name}: its write-ahead log could not be emptied")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextlib.contextmanager
    def _open(self) -> Iterator[sqlite3.Connection]:
        """The connection, one call at a time; sqlite3 errors as ChangeLogError, and a file SQLite
        cannot read as a database moved aside for a new one (the next call begins it)."""
        with self._lock:
            try:
                if self._conn is not None and self._inode != _inode(self.path):  # removed since
                    self._conn.close()
                    self._conn = None
                if self._conn is None:
                    self._conn = self._connect()
                    self._inode = _inode(self.path)
                yield self._conn
            except sqlite3.DatabaseError as exc:
                damaged = _is_damage(exc)
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                if damaged:
                    self._remove()
                raise ChangeLogError(f"change log {self.path.name}: {exc}") from None
            except OSError as exc:
                raise ChangeLogError(f"change log {self.path.name}: {exc.strerror or exc}") from None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.busy_s, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # news, not records: no fsync per entry
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        conn.isolation_level = "DEFERRED"  # `with conn:` transactions from here on
        return conn

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                self.path.with_name(self.path.name + suffix).unlink()


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "corrupt" in text
