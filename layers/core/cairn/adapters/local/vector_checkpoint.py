"""The identity a brain's vector file had when it was last known to hold what its sums say.

A full check (vector_health.check) reads the whole file (139 of a first search's 163 ms at 20,000
rows written a commit at a time, 0.9-2.2 s at a million rows), and every process paid it once,
before its first search of the brain, or at its start. The index writes a vector file only by
appending inside its write transactions; an append that finds the file as the checkpoint
recorded it records the file's identity after the append (and the rows' sums) in the same
transaction, and a full check that found the file sound records the identity it read. A process
that finds the file as recorded (inode, size, mtime and ctime: every write through the file
system moves ctime, which no program can set back) knows its bytes are those last verified, and
reads none of them; any other file is checked in full: cut short, written into, replaced, or
appended to by a crashed or older writer. What this does not see is a disk that changes bytes
with no write (the sums do, and `cairn check` and `cairn serve`'s background warm-up read every
file in full), nor, on a file system whose timestamps move a few milliseconds at a time, a write
of the same size within that tick of the recorded one (Linux gives a write after a stat a
distinct ctime since 6.13).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

Identity = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns

SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_checked (
    brain_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    PRIMARY KEY (brain_id, epoch)
) WITHOUT ROWID;
"""


def identity(path: Path) -> Identity | None:
    """The file's identity now; None when there is none (or something else is in its place)."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    if not path.is_file():
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def recorded(conn: sqlite3.Connection, brain_id: str, epoch: int) -> Identity | None:
    row = conn.execute(
        "SELECT inode, size, mtime_ns, ctime_ns FROM vector_checked WHERE brain_id = ? AND epoch = ?",
        (brain_id, epoch),
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]), int(row[3]))


def unchanged(conn: sqlite3.Connection, brain_id: str, epoch: int, path: Path) -> bool:
    """Whether the file is as last verified (read `recorded` in the caller's transaction)."""
    known = recorded(conn, brain_id, epoch)
    return known is not None and known == identity(path)


def record(conn: sqlite3.Connection, brain_id: str, epoch: int, found: Identity | None) -> None:
    """Inside a write transaction: the file verified as `found` (None: not known to be)."""
    if found is None:
        conn.execute("DELETE FROM vector_checked WHERE brain_id = ? AND epoch = ?", (brain_id, epoch))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO vector_checked (brain_id, epoch, inode, size, mtime_ns, ctime_ns) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (brain_id, epoch, *found),
        )


def forget(conn: sqlite3.Connection, brain_id: str, *, below_epoch: int | None = None) -> None:
    limit = below_epoch if below_epoch is not None else 1 << 62
    conn.execute("DELETE FROM vector_checked WHERE brain_id = ? AND epoch < ?", (brain_id, limit))
