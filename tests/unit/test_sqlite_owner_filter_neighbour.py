"""A search of a small brain as a principal who sees only their own memories (ChunkFilter.owners)
costs the same beside a neighbour of 300 owned chunks as beside one of 3,000: the rows other
owners hold are read from the searched brain's facets alone. The work is counted as SQLite
virtual-machine steps; the index of a file written before it existed is made at its opening."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.models import OWNER_FACET
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.contract.test_chunk_index_contract import DIM, axis, chunk
from tests.support.sqlite_steps import steps

OWNED = ChunkFilter(("small",), owners=(("small", "ann"),))


def _index(path: Path, neighbour: int) -> SqliteChunkIndex:
    index = SqliteChunkIndex(path / "chunks.db", path / "vectors", DIM, background_maintenance=False)
    rng = np.random.default_rng(5)
    for start in range(0, neighbour, 500):
        chunks = [
            chunk(f"n{n}", f"note {n} about the kettle", brain_id="big", facets={OWNER_FACET: f"user{n % 7}"})
            for n in range(start, min(neighbour, start + 500))
        ]
        index.upsert(chunks, rng.standard_normal((len(chunks), DIM)).astype(np.float32))
    mine = chunk("mine", "the kettle descales on fridays", brain_id="small", facets={OWNER_FACET: "ann"})
    theirs = chunk("theirs", "the kettle is bob's", brain_id="small", facets={OWNER_FACET: "bob"})
    index.upsert([mine, theirs], np.stack([axis(0), axis(1)]))
    return index


def _search_steps(index: SqliteChunkIndex) -> tuple[int, list[str]]:
    """SQLite VM steps (in tens) of the small brain's first search after its latest write."""
    index.upsert([chunk("other", "unrelated words", brain_id="small")], axis(2).reshape(1, DIM))
    return steps(
        index._db.get(), lambda: [hit.chunk.id for hit in index.search(ChunkQuery("kettle", axis(1), OWNED))]
    )


def test_an_owner_filtered_search_does_not_read_the_neighbours_facets(tmp_path: Path) -> None:
    small, big = _index(tmp_path / "small", 300), _index(tmp_path / "big", 3_000)
    try:
        (few, few_found), (many, many_found) = _search_steps(small), _search_steps(big)
    finally:
        small.close()
        big.close()
    assert few_found == many_found and "mine" in few_found and "theirs" not in few_found
    assert many <= few * 1.5 + 20, (few, many)


def test_a_file_written_before_opens_with_the_brain_s_facet_index(tmp_path: Path) -> None:
    """Made as the previous release made it: facets indexed by name and value first."""
    _index(tmp_path, 10).close()
    conn = sqlite3.connect(tmp_path / "chunks.db")
    conn.execute("DROP INDEX chunk_facets_brain")
    conn.execute("CREATE INDEX chunk_facets_value ON chunk_facets (name, value, brain_id, vec_row)")
    conn.commit()
    conn.close()
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)
    try:
        names = {
            row[0] for row in index._db.get().execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        assert "chunk_facets_brain" in names and "chunk_facets_value" not in names
        assert [hit.chunk.id for hit in index.search(ChunkQuery("kettle", None, OWNED))] == ["mine"]
    finally:
        index.close()
