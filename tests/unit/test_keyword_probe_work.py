"""The keyword probe a brain's first search or write in a process runs (fts_health.problem with
`whole_content` False, fts_damage.py) reads its eight sampled rows, not the whole table: its work
(SQLite's virtual machine steps, counted by the progress handler) does not grow with the brain,
where finding the rows' span with min() and max() in one query scanned every row of `_content`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from cairn.adapters.local import fts_health
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from tests.contract.test_chunk_index_contract import DIM, chunk


def _steps(conn: sqlite3.Connection, brain_id: str, *, whole_content: bool) -> int:
    steps = 0

    def counted() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(counted, 100)
    try:
        assert fts_health.problem(conn, brain_id, whole_content=whole_content) == ""
    finally:
        conn.set_progress_handler(None, 100)
    return steps


def _brain(index: SqliteChunkIndex, brain_id: str, rows: int) -> None:
    rng = np.random.default_rng(5)
    chunks = [
        chunk(f"{brain_id}-{n}", f"heron{n} waits by the reeds of marsh{n % 50}", brain_id=brain_id)
        for n in range(rows)
    ]
    index.upsert(chunks, rng.standard_normal((rows, DIM)).astype(np.float32))


def test_the_first_use_probe_reads_the_sample_not_the_whole_table(tmp_path: Path) -> None:
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)
    _brain(index, "small", 200)
    _brain(index, "big", 4_000)
    conn = index._db.get()
    small, big = (_steps(conn, b, whole_content=False) for b in ("small", "big"))
    assert big < 2 * small, (small, big)  # twenty times the rows
    # A check still reads every page of `_content`: that part of its work grows with the brain
    scan = {b: _steps(conn, b, whole_content=True) - first for b, first in (("small", small), ("big", big))}
    assert scan["big"] > 10 * scan["small"] > 0, scan
    index.close()
