"""Checksums of the vector files, kept in the chunk index's database.

A vector file is append-only; each commit that points chunks at rows past what the sums cover
sums those rows, in the same transaction (the rows are fsynced before it, and every earlier
append is whole: appends hold the file's lock), in pieces of at most PIECE_ROWS rows, one CRC-32
each (`vector_sums`). Checking a file re-reads every piece: a piece whose bytes no longer add up,
or that the file no longer holds whole (truncated), is unsound, and so are rows a chunk points at
past the file's end. Pieces follow commits, so a lost last write costs its own rows, not a whole
block. (An ANN index file's sum is kept beside it: ann_index.py.)

Files written before the sums existed are adopted: on first check the rows no piece covers are
summed as they are, when the file still holds every row a chunk points at.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from cairn.adapters.local.vector_store import VectorFile
from cairn.ports.chunks import Stop

PIECE_ROWS = 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_sums (
    brain_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    first_row INTEGER NOT NULL,
    rows INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    PRIMARY KEY (brain_id, epoch, first_row)
) WITHOUT ROWID;
"""


def covered(conn: sqlite3.Connection, brain_id: str, epoch: int) -> int:
    """Rows of the file the sums cover, from row 0."""
    row = conn.execute(
        "SELECT first_row + rows FROM vector_sums WHERE brain_id = ? AND epoch = ? "
        "ORDER BY first_row DESC LIMIT 1",
        (brain_id, epoch),
    ).fetchone()
    return 0 if row is None else int(row[0])


def extend(conn: sqlite3.Connection, brain_id: str, epoch: int, file: VectorFile, upto: int) -> None:
    """Cover rows up to `upto` (exclusive); call inside the write transaction that commits chunks
    pointing at them. Rows already covered are left alone."""
    start = covered(conn, brain_id, epoch)
    wanted = [(first, min(PIECE_ROWS, upto - first)) for first in range(start, upto, PIECE_ROWS)]
    sums = file.crcs(wanted) if wanted else []
    conn.executemany(
        "INSERT OR REPLACE INTO vector_sums (brain_id, epoch, first_row, rows, crc) VALUES (?, ?, ?, ?, ?)",
        [(brain_id, epoch, first, rows, crc) for (first, rows), crc in zip(wanted, sums, strict=True)],
    )


def pieces(conn: sqlite3.Connection, brain_id: str, epoch: int) -> dict[int, tuple[int, int]]:
    """First row -> (rows, crc) of every piece of the brain's file in this epoch."""
    found = conn.execute(
        "SELECT first_row, rows, crc FROM vector_sums WHERE brain_id = ? AND epoch = ?", (brain_id, epoch)
    )
    return {int(first): (int(rows), int(crc)) for first, rows, crc in found}


@dataclass(frozen=True)
class SumCheck:
    """What re-reading a vector file against its sums found: its whole rows, the rows the sums
    cover, and the pieces (first row, end row) whose bytes no longer add up or that the file no
    longer holds whole."""

    file_rows: int
    covered_rows: int
    bad: tuple[tuple[int, int], ...]


def check_sums(file: VectorFile, sums: dict[int, tuple[int, int]], stop: Stop | None = None) -> SumCheck:
    """Re-read every piece of the file (`sums`: first row -> (rows, crc)) and compare;
    CheckStopped when `stop` says so meanwhile."""
    file_rows = file.stored_rows()
    ordered = sorted(sums.items())
    found = file.crcs([(first, rows) for first, (rows, _) in ordered], stop=stop)
    bad = [
        (first, first + rows)
        for (first, (rows, crc)), now in zip(ordered, found, strict=True)
        if first + rows > file_rows or now != crc
    ]
    total = max((first + rows for first, (rows, _) in ordered), default=0)
    return SumCheck(file_rows, total, tuple(bad))


def rebase(conn: sqlite3.Connection, brain_id: str, epoch: int, file: VectorFile) -> None:
    """Take the file as it is now as the truth the sums describe: after the chunks pointing at
    unsound rows were removed, whatever those rows hold is no longer read."""
    conn.execute("DELETE FROM vector_sums WHERE brain_id = ? AND epoch = ?", (brain_id, epoch))
    extend(conn, brain_id, epoch, file, file.stored_rows())


def forget(conn: sqlite3.Connection, brain_id: str, *, below_epoch: int | None = None) -> None:
    """Drop the sums of the brain's files (of epochs before `below_epoch`, or of every epoch)."""
    limit = below_epoch if below_epoch is not None else 1 << 62
    conn.execute("DELETE FROM vector_sums WHERE brain_id = ? AND epoch < ?", (brain_id, limit))
