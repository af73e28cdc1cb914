"""Writes that name chunks by id cost the embedded chunk index the same in a brain of 300
chunks as in one of 3,000: an upsert looking up the vector rows its chunks already point at, and
a removal of chunks by id, each seek the id, not every chunk of the brain. The work is counted as
SQLite virtual-machine steps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from tests.contract.test_chunk_index_contract import DIM, chunk
from tests.support.sqlite_steps import steps


def _brain(path: Path, size: int) -> SqliteChunkIndex:
    index = SqliteChunkIndex(path / "chunks.db", path / "vectors", DIM, background_maintenance=False)
    rng = np.random.default_rng(3)
    for start in range(0, size, 500):
        chunks = [chunk(f"c{n}", f"note {n} about the kettle") for n in range(start, min(size, start + 500))]
        index.upsert(chunks, rng.standard_normal((len(chunks), DIM)).astype(np.float32))
    return index


def _steps(index: SqliteChunkIndex, work: Callable[[SqliteChunkIndex], object]) -> int:
    """The SQLite VM steps (in tens) `work` takes on this thread's connection."""
    return steps(index._db.get(), lambda: work(index))[0]


def _rewrite(index: SqliteChunkIndex) -> None:
    index.upsert([chunk("c7", "note 7 about the kettle, descaled")], np.ones((1, DIM), dtype=np.float32))


def _remove(index: SqliteChunkIndex) -> None:
    assert index.delete_chunks("b1", ["c9", "absent"]) == 1


@pytest.mark.parametrize("work", [_rewrite, _remove], ids=["upsert", "delete_chunks"])
def test_a_write_by_id_does_not_read_the_whole_brain(
    tmp_path: Path, work: Callable[[SqliteChunkIndex], None]
) -> None:
    small, big = _brain(tmp_path / "small", 300), _brain(tmp_path / "big", 3_000)
    try:
        few, many = _steps(small, work), _steps(big, work)
        assert many <= few * 1.5 + 20, (few, many)
        for index in (small, big):
            assert "c9" not in index.get_many("b1", ["c7", "c9"]) or work is _rewrite
            assert index.get_chunk("b1", "c7") is not None
    finally:
        small.close()
        big.close()


def test_an_activation_does_not_read_the_brain_s_other_staged_chunks(tmp_path: Path) -> None:
    """Beside another document's staged (inactive) chunks, 300 or 3,000 of them: an upload in
    flight, or what a failed ingest left."""
    indexes = []
    for size in (300, 3_000):
        index = _brain(tmp_path / str(size), 10)
        rng = np.random.default_rng(4)
        for start in range(0, size, 500):
            staged = [
                chunk(f"big{n}", "a page of the big upload", document_id="big", ordinal=n, active=False)
                for n in range(start, min(size, start + 500))
            ]
            index.upsert(staged, rng.standard_normal((len(staged), DIM)).astype(np.float32))
        mine = [
            chunk(f"m{n}", "the new kettle note", document_id="mine", ordinal=n, active=False)
            for n in range(2)
        ]
        index.upsert(mine, np.ones((2, DIM), dtype=np.float32))
        indexes.append(index)
    try:
        few, many = (_steps(index, lambda i: i.activate("b1", "mine", ["m0", "m1"])) for index in indexes)
        assert many <= few * 1.5 + 20, (few, many)
        for index in indexes:
            found = index.get_many("b1", ["m0", "m1", "big0"])
            assert found["m0"].active and found["m1"].active and not found["big0"].active
    finally:
        for index in indexes:
            index.close()
