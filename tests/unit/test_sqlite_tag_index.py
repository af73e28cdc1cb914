"""A small brain's compaction, and its searches filtered on tags, cost the same beside a neighbour
of 300 tagged chunks as beside one of 3,000: compaction's renumbering of the brain's tag rows and
the tag filters seek the brain's tags (chunk_tags_by_brain), not every brain's rows of a tag. The
work is counted as SQLite virtual-machine steps; the index of a file written before it existed is
made at its opening."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.upgrade_wait import OpeningWait
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.contract.test_chunk_index_contract import DIM, axis, chunk

TAGS = ["kitchen", "errand"]


def _index(path: Path, neighbour: int) -> SqliteChunkIndex:
    index = SqliteChunkIndex(path / "chunks.db", path / "vectors", DIM, background_maintenance=False)
    rng = np.random.default_rng(5)
    for start in range(0, neighbour, 500):
        chunks = [
            chunk(f"n{n}", f"note {n} about the kettle", brain_id="big", tags=TAGS)
            for n in range(start, min(neighbour, start + 500))
        ]
        index.upsert(chunks, rng.standard_normal((len(chunks), DIM)).astype(np.float32))
    mine = [chunk(f"s{n}", f"the kettle {n}", brain_id="small", tags=TAGS[n % 2 :]) for n in range(4)]
    index.upsert(mine, np.stack([axis(n) for n in range(4)]))
    return index


def _steps(index: SqliteChunkIndex, work: Callable[[SqliteChunkIndex], object]) -> int:
    """The SQLite VM steps (in tens) `work` takes on this thread's connection (compaction's
    renumbering transaction included: its own progress handler is set aside meanwhile)."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    @contextmanager
    def counting(_: OpeningWait, conn: sqlite3.Connection) -> Iterator[None]:
        conn.set_progress_handler(tick, 10)
        yield

    conn = index._db.get()
    conn.set_progress_handler(tick, 10)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OpeningWait, "beating", counting)
        try:
            work(index)
        finally:
            conn.set_progress_handler(None, 10)
    return counted[0]


def _compact(index: SqliteChunkIndex) -> None:
    compaction = index.compact("small")
    assert compaction is not None and compaction.rows_after < compaction.rows_before


def _found(index: SqliteChunkIndex, chunk_filter: ChunkFilter) -> list[str]:
    return sorted(hit.chunk.id for hit in index.search(ChunkQuery("kettle", axis(1), chunk_filter)))


def test_a_compaction_renumbers_the_brain_s_tags_only(tmp_path: Path) -> None:
    small, big = _index(tmp_path / "small", 300), _index(tmp_path / "big", 3_000)
    try:
        for index in (small, big):  # two dead vector rows for the compaction to drop
            index.upsert(
                [chunk(f"s{n}", f"the kettle {n}, again", brain_id="small", tags=TAGS) for n in (0, 1)],
                np.stack([axis(5), axis(6)]),
            )
        few, many = _steps(small, _compact), _steps(big, _compact)
        assert many <= few * 1.5 + 20, (few, many)
        for index in (small, big):
            assert _found(index, ChunkFilter(("small",), tags=("kitchen",))) == ["s0", "s1", "s2"]
    finally:
        small.close()
        big.close()


@pytest.mark.parametrize(
    "chunk_filter",
    [ChunkFilter(("small",), tags=("errand",)), ChunkFilter(("small",), any_tags=(("errand", "kitchen"),))],
    ids=["tags", "any_tags"],
)
def test_a_tag_filter_reads_the_brain_s_tags(tmp_path: Path, chunk_filter: ChunkFilter) -> None:
    small, big = _index(tmp_path / "small", 300), _index(tmp_path / "big", 3_000)
    try:
        found: list[list[str]] = []
        few, many = (_steps(index, lambda i: found.append(_found(i, chunk_filter))) for index in (small, big))
        assert many <= few * 1.5 + 20, (few, many)
        assert found[0] == found[1] and "s1" in found[0]
    finally:
        small.close()
        big.close()


def test_a_file_written_before_opens_with_the_brain_s_tag_index(tmp_path: Path) -> None:
    """Made as the previous release made it: tags indexed by tag first."""
    _index(tmp_path, 10).close()
    conn = sqlite3.connect(tmp_path / "chunks.db")
    conn.execute("DROP INDEX chunk_tags_by_brain")
    conn.execute("CREATE INDEX chunk_tags_brain ON chunk_tags (tag, brain_id, vec_row)")
    conn.commit()
    conn.close()
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)
    try:
        names = {
            row[0] for row in index._db.get().execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        assert "chunk_tags_by_brain" in names and "chunk_tags_brain" not in names
        assert _found(index, ChunkFilter(("small",), tags=("kitchen",))) == ["s0", "s2"]
    finally:
        index.close()
