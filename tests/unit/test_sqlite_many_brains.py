"""What the embedded chunk index does for one brain costs the same beside 20 other brains as
beside 200: whether a brain has term postings is looked up by its table's name, not by reading
the whole schema (which holds some seven tables a brain). The work is counted as SQLite
virtual-machine steps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import fts_search
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.contract.test_chunk_index_contract import DIM, chunk
from tests.support.sqlite_steps import steps


def _index(path: Path, others: int) -> SqliteChunkIndex:
    """Brain b1 of 80 chunks (past SMALL_TABLE: it has term postings) beside `others` brains of one."""
    index = SqliteChunkIndex(path / "chunks.db", path / "vectors", DIM, background_maintenance=False)
    rng = np.random.default_rng(9)
    mine = [chunk(f"c{n}", f"note {n} about the kettle") for n in range(80)]
    theirs = [chunk(f"o{n}", "another kettle", brain_id=f"other{n}") for n in range(others)]
    for chunks in (mine, theirs):
        index.upsert(chunks, rng.standard_normal((len(chunks), DIM)).astype(np.float32))
    return index


def _search(index: SqliteChunkIndex) -> object:
    return index.search(ChunkQuery("kettle note", None, ChunkFilter(("b1",))))


def _write(index: SqliteChunkIndex) -> object:
    index.upsert([chunk("c3", "note 3 about the kettle, descaled")], np.ones((1, DIM), dtype=np.float32))
    return None


def _steps(index: SqliteChunkIndex, work: Callable[[SqliteChunkIndex], object]) -> tuple[int, object]:
    work(index)  # the brain's rows cached and its keyword index probed, as after a first request
    return steps(index._db.get(), lambda: work(index))


@pytest.mark.parametrize("work", [_search, _write], ids=["search", "upsert"])
def test_a_brain_s_request_does_not_grow_with_the_other_brains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, work: Callable[[SqliteChunkIndex], object]
) -> None:
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    few, many = _index(tmp_path / "few", 20), _index(tmp_path / "many", 200)
    try:
        (few_steps, few_answer), (many_steps, many_answer) = _steps(few, work), _steps(many, work)
    finally:
        few.close()
        many.close()
    assert few_answer == many_answer
    assert many_steps <= few_steps * 1.5 + 20, (few_steps, many_steps)
