"""Rows copied from one epoch's vector file into the next only once their bytes are checked.

Compaction moves a brain's live rows into a new file and sums that file afresh: a row whose bytes
changed on disk since they were summed (a flipped bit, a write into the file) would be carried
over under a sum computed from the changed bytes, and nothing could tell afterwards that its
vector is wrong. So every piece of the old file that holds a copied row is read once, its CRC-32
compared with the piece's sum (vector_sums.py), and the rows are taken from those same bytes
(no second read for a change to slip in between). A piece that does not add up, or that the
file no longer holds whole, stops the copy (UnsoundRows). Rows no piece covers (a file written
before the sums, not checked since) are copied as they are: there is nothing to compare them with.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

from cairn.adapters.local.vector_store import Rows, VectorFile

_RUN_ROWS = 4096  # at most this many rows (6 MB at 384 dimensions) read at once


class UnsoundRows(Exception):
    """Rows `[low, high)` of the old file no longer hold what their sum says."""

    def __init__(self, low: int, high: int) -> None:
        super().__init__(f"vector rows {low}-{high - 1} no longer match their sum")
        self.low, self.high = low, high


def copy_checked(
    old: VectorFile,
    rows: Rows,
    sums: dict[int, tuple[int, int]],
    new: VectorFile,
    *,
    batch_rows: int,
    stop: Callable[[], bool] | None = None,
) -> bool:
    """Append `rows` of `old` (ascending) to `new`, `batch_rows` at a time, each one's piece
    checked against `sums` (first row -> (rows, crc)) first; UnsoundRows at the first that fails.
    False, the copy left part done, when `stop` says so before a batch."""
    ordered = sorted(sums.items())
    firsts = np.array([first for first, _ in ordered], dtype=np.int64)
    ends = firsts + np.array([count for _, (count, _) in ordered], dtype=np.int64)
    crcs = [crc for _, (_, crc) in ordered]
    for start in range(0, rows.size, batch_rows):
        if stop is not None and stop():
            return False
        batch = rows[start : start + batch_rows]
        piece = np.searchsorted(firsts, batch, side="right") - 1
        inside = (piece >= 0) & (batch < ends[np.maximum(piece, 0)])
        out = np.empty((batch.size, old.dimension), dtype=np.float32)
        for lo, hi in _runs(firsts, ends, np.unique(piece[inside])):
            data = old.span(int(firsts[lo]), int(ends[hi - 1] - firsts[lo]))
            _check(data, firsts, ends, crcs, lo, hi, old.dimension)
            matrix = np.frombuffer(data, dtype="<f4").reshape(-1, old.dimension)
            taken = np.flatnonzero(inside & (piece >= lo) & (piece < hi))
            out[taken] = matrix[batch[taken] - firsts[lo]]
        loose = np.flatnonzero(~inside)
        if loose.size:
            out[loose] = old.read(batch[loose])
        new.append(out)
    return True


def _runs(firsts: Rows, ends: Rows, needed: Rows) -> list[tuple[int, int]]:
    """The needed pieces (indexes, ascending) as runs [lo, hi) of adjacent pieces, each read at
    once: at most _RUN_ROWS rows, unless one piece is longer."""
    runs: list[tuple[int, int]] = []
    for index in needed.tolist():
        if runs:
            lo, hi = runs[-1]
            if hi == index and ends[hi - 1] == firsts[index] and ends[index] - firsts[lo] <= _RUN_ROWS:
                runs[-1] = (lo, index + 1)
                continue
        runs.append((index, index + 1))
    return runs


def _check(data: bytes, firsts: Rows, ends: Rows, crcs: list[int], lo: int, hi: int, dimension: int) -> None:
    view, row_bytes, base = memoryview(data), 4 * dimension, int(firsts[lo])
    for index in range(lo, hi):
        first, end = int(firsts[index]), int(ends[index])
        part = view[(first - base) * row_bytes : (end - base) * row_bytes]
        if len(part) != (end - first) * row_bytes or zlib.crc32(part) != crcs[index]:
            raise UnsoundRows(first, end)
