"""A search's vector leg can name rows its snapshot does not hold: the cached vector rows may be
newer than the snapshot (written since it began). Such rows are fused as if the leg never had them:
the hits, their scores and their ranks are those of a search without them, top_k of them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local.chunk_search import ChunkSearch
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkQuery

DIM = 8
UNSEEN = 987_654  # a rowid no row of the snapshot has


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteChunkIndex]:
    idx = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(12, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [
        Chunk(
            id=f"c{i:02d}",
            brain_id="b1",
            document_id=f"d{i}",
            path=f"notes/{i}.md",
            ordinal=0,
            text=f"heron note {i} " + "marsh " * (i % 4),
            created_at=datetime(2025, 1, 1, tzinfo=UTC),
        )
        for i in range(12)
    ]
    idx.upsert(chunks, vectors)
    yield idx
    idx.close()


def _search(index: SqliteChunkIndex) -> list[tuple[str, float, int | None, int | None]]:
    query = ChunkQuery(
        text="heron marsh",
        vector=[1.0] + [0.0] * (DIM - 1),
        filter=ChunkFilter(brain_ids=("b1",)),
        top_k=5,
        nearest=2,
    )
    return [(h.chunk.id, h.score, h.bm25_rank, h.vector_rank) for h in index.search(query)]


def test_rows_the_snapshot_does_not_hold_are_fused_as_if_never_found(
    index: SqliteChunkIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _search(index)
    assert len(expected) == 6  # top_k 5, then the vector leg's second, which the fusion ranked past them

    leg = ChunkSearch._vector_leg

    def with_unseen(self: ChunkSearch, *args: object) -> dict[int, float]:
        found = leg(self, *args)  # type: ignore[arg-type]
        return {UNSEEN: 1.0, UNSEEN + 1: 0.99, **found}  # first in the vector leg

    monkeypatch.setattr(ChunkSearch, "_vector_leg", with_unseen)
    assert _search(index) == expected
