"""The embedded keyword leg does work for the rows its filter can pass, not for every match: a
search of current values over a key written many times reads about as much with 1,600
superseded values as with 100 (fts_search.py, `allowed`), through FTS5 and through the term
postings alike. The work is counted as SQLite virtual-machine steps of the search."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import fts_search
from cairn.adapters.local.brain_rows import BrainRows
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.unit.test_kept_vector_rows import value

DIM = 8


def _chain(path: Path, superseded: int) -> SqliteChunkIndex:
    """One key's values, each superseding the one before, as a version chain writes them: the
    older values first, the current one last."""
    index = SqliteChunkIndex(path / "chunks.db", path / "vectors", DIM, background_maintenance=False)
    rng = np.random.default_rng(7)
    for start in range(0, superseded + 1, 500):
        chunks = [value(n, current=n == superseded) for n in range(start, min(superseded + 1, start + 500))]
        index.upsert(chunks, rng.standard_normal((len(chunks), DIM)).astype(np.float32))
    return index


def _steps(index: SqliteChunkIndex) -> tuple[int, list[str]]:
    """SQLite VM steps of a keyword search of current values, and the ids it found."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn = index._db.get()
    asked = ChunkQuery("how often does the kettle descale", None, ChunkFilter(("b1",), current_only=True))
    index.search(asked)  # the brain's rows cached, as for every search after the first
    conn.set_progress_handler(count, 1)
    try:
        found = [h.chunk.id for h in index.search(asked)]
    finally:
        conn.set_progress_handler(None, 1)
    return steps[0], found


@pytest.mark.parametrize("postings", [False, True], ids=["fts5", "postings"])
def test_a_current_search_does_not_grow_with_the_superseded_values_it_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postings: bool
) -> None:
    if postings:  # brains past SMALL_TABLE rows get term postings and are ranked from them
        monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    few, many = _chain(tmp_path / "few", 100), _chain(tmp_path / "many", 1_600)
    try:
        (few_steps, few_found), (many_steps, many_found) = _steps(few), _steps(many)
    finally:
        few.close()
        many.close()
    assert (few_found, many_found) == (["v100"], ["v1600"])
    # 16 times the superseded values; before, the leg's work grew with them (8 to 10 times)
    assert many_steps < 2 * few_steps, (few_steps, many_steps)


def test_both_legs_of_a_search_share_each_brains_filter_mask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mask of the rows a filter passes is made once a brain and search (FilterMasks), though
    the keyword leg and the vector leg both use it."""
    index = _chain(tmp_path, 20)
    made: list[str] = []
    real = BrainRows.allowed

    def counted(rows: BrainRows, conn: object, brain_id: str, chunk_filter: ChunkFilter) -> object:
        made.append(brain_id)
        return real(rows, conn, brain_id, chunk_filter)  # type: ignore[arg-type]

    vector = np.ones(DIM, dtype=np.float32)
    asked = ChunkQuery("how often does the kettle descale", vector, ChunkFilter(("b1",), current_only=True))
    try:
        index.search(asked)  # the brain's rows cached, as for every search after the first
        monkeypatch.setattr(BrainRows, "allowed", counted)
        found = [h.chunk.id for h in index.search(asked)]
    finally:
        index.close()
    assert found == ["v20"]
    assert made == ["b1"]
