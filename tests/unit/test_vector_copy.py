"""Rows copied between epochs through their checked pieces (adapters/local/vector_copy.py): the
rows arrive as the old file holds them whatever the batches and pieces, and a changed or missing
piece stops the copy naming its rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local.vector_copy import UnsoundRows, copy_checked
from cairn.adapters.local.vector_store import VectorFile

DIM = 4


def summed(tmp_path: Path, sizes: list[int], loose: int) -> tuple[VectorFile, dict[int, tuple[int, int]]]:
    """A file of pieces of `sizes` rows, each summed, then `loose` rows no sum covers."""
    file = VectorFile(tmp_path / "old.f32", DIM)
    rng = np.random.default_rng(2)
    sums: dict[int, tuple[int, int]] = {}
    for size in sizes:
        rows = file.append(rng.standard_normal((size, DIM)).astype(np.float32))
        sums[int(rows[0])] = (size, file.crc(int(rows[0]), size))
    if loose:
        file.append(rng.standard_normal((loose, DIM)).astype(np.float32))
    return file, sums


@pytest.mark.parametrize("batch_rows", [1, 3, 7, 1000])
def test_the_copied_rows_are_the_old_files_rows_in_order(tmp_path: Path, batch_rows: int) -> None:
    old, sums = summed(tmp_path, [1, 5, 2, 9, 1, 4], loose=3)
    rows = np.array([0, 2, 3, 6, 7, 8, 9, 15, 16, 17, 21, 22, 23, 24], dtype=np.int64)
    new = VectorFile(tmp_path / "new.f32", DIM)
    copy_checked(old, rows, sums, new, batch_rows=batch_rows)
    assert np.array_equal(new.read(np.arange(rows.size, dtype=np.int64)), old.read(rows))


@pytest.mark.parametrize("how", ["a byte changed", "cut short"])
def test_a_piece_that_no_longer_adds_up_stops_the_copy(tmp_path: Path, how: str) -> None:
    old, sums = summed(tmp_path, [4, 4, 4], loose=0)
    with old.path.open("r+b") as fh:
        if how == "a byte changed":
            fh.seek(5 * 4 * DIM + 1)
            fh.write(b"\xff")
        else:
            fh.truncate(6 * 4 * DIM)
    new = VectorFile(tmp_path / "new.f32", DIM)
    copy_checked(old, np.array([0, 1, 3], dtype=np.int64), sums, new, batch_rows=2)  # rows before it
    with pytest.raises(UnsoundRows) as stopped:
        copy_checked(old, np.array([0, 5, 9], dtype=np.int64), sums, new, batch_rows=2)
    assert (stopped.value.low, stopped.value.high) == (4, 8)
