"""Mnemosyne's fusion: RRF over each leg's first RRF_DEPTH hits, full-text hits under
FULLTEXT_FLOOR of the best BM25 or under FULLTEXT_MEANING of the vector leg's best cosine left
out, the rest after them scored 0.

The index is a stand-in of the ChunkIndex port that answers each leg with a list arranged by the
test, over real documents written through the fake container, so the order each rule makes is
the only thing that varies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkHit, ChunkQuery
from cairn.services.mnemosyne.library_search import (
    FULLTEXT_FLOOR,
    FULLTEXT_MEANING,
    RRF_DEPTH,
    LibrarySearch,
    SearchRequest,
)
from tests.fakes.container import fake_container

DOCS = 60


@dataclass
class ArrangedLegs:
    """Answers a vector query with `vector` (similarity falling from `top`) and a keyword query
    with `fulltext` (each with its BM25); a chunk's stored vector has the cosine `cosine` gives it
    with `query` (0.9 unless given); other calls go to the real fake index."""

    real: object
    query: np.ndarray
    vector: list[Chunk] = field(default_factory=list)
    fulltext: list[tuple[Chunk, float]] = field(default_factory=list)
    cosine: dict[str, float] = field(default_factory=dict)
    top: float = 0.9

    def get_vectors(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        aside = np.roll(self.query, 1) - (np.roll(self.query, 1) @ self.query) * self.query
        aside /= np.linalg.norm(aside)
        out = {}
        for chunk_id in chunk_ids:
            cos = self.cosine.get(chunk_id, 0.9)
            out[chunk_id] = cos * self.query + np.sqrt(1 - cos * cos) * aside
        return out

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        if query.vector is not None:
            return [
                ChunkHit(chunk=c, score=0.0, vector_rank=r, vector_similarity=self.top - r / 1000)
                for r, c in enumerate(self.vector, start=1)
            ]
        return [
            ChunkHit(chunk=c, score=0.0, bm25_rank=r, bm25_score=bm25)
            for r, (c, bm25) in enumerate(self.fulltext, start=1)
        ]

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


@pytest.fixture
def arranged() -> tuple[LibrarySearch, ArrangedLegs, list[Chunk], object]:
    c = fake_container()
    brain = c.brains.create("Team", slug="team")
    library = c.libraries.describe(brain.id, library_type="nonfiction")  # vector 0.4, full text 1.0
    real = c.library_search.chunks
    chunks: list[Chunk] = []
    for i in range(DOCS):
        done = c.ingest.ingest_bytes(
            library.brain, f"Document {i}.".encode(), name=f"d{i:02d}.md", path=f"d/d{i:02d}.md"
        )
        chunks += real.get_chunks(brain.id, done.document_id)
    assert len(chunks) == DOCS
    legs = ArrangedLegs(real, c.library_search.embedder.embed(["the query"])[0])
    search = LibrarySearch(
        legs,  # type: ignore[arg-type]
        c.library_search.embedder,
        c.library_search.concepts,
        c.library_search.documents,
        calibration=c.library_search.calibration,
    )
    return search, legs, chunks, c.libraries.library(library.uid)


def order(search: LibrarySearch, library: object, limit: int = 10) -> list[tuple[str, float]]:
    request = SearchRequest(
        "the query", [library], limit=limit, search_types=("vector", "fulltext"), rerank=False
    )  # type: ignore[list-item]
    return [(cand.chunk.path, cand.score) for cand in search.search(request).candidates]


def test_a_leg_counts_only_its_first_hits(
    arranged: tuple[LibrarySearch, ArrangedLegs, list[Chunk], object],
) -> None:
    """Chunks both legs ranked just past RRF_DEPTH come after every chunk of either leg's first
    RRF_DEPTH: fused over whole legs (k = 60) the first of them would lead the vector leg's best
    (1/81 + 0.4/81 against 0.4/61)."""
    search, legs, chunks, library = arranged
    meant, worded = chunks[0], chunks[1]
    vector_rest, words_rest, shared = chunks[2:21], chunks[21:40], chunks[40:]
    legs.vector = [meant, *vector_rest, *shared]
    legs.fulltext = [(c, 5.0) for c in [worded, *words_rest, *shared]]  # none under the floor
    ranked = order(search, library, limit=60)
    assert ranked[0][0] == worded.path
    head = [path for path, score in ranked if score > 0]
    assert set(head) == {c.path for c in chunks[:40]}
    assert ranked[: len(head)] == [(p, s) for p, s in ranked if s > 0]
    assert all(score == 0 for path, score in ranked if path in {c.path for c in shared})


def test_full_text_hits_under_the_floor_are_not_fused(
    arranged: tuple[LibrarySearch, ArrangedLegs, list[Chunk], object],
) -> None:
    """A chunk full text found by one incidental word (BM25 well under FULLTEXT_FLOOR of the best)
    gains nothing from it; the same chunk at the floor would have been lifted."""
    search, legs, chunks, library = arranged
    best, incidental, vector_second = chunks[0], chunks[1], chunks[2]
    legs.vector = [vector_second, incidental, *chunks[3:10]]
    weak = 10.0 * FULLTEXT_FLOOR * 0.5
    legs.fulltext = [(best, 10.0), (incidental, weak)]
    ranked = [path for path, _ in order(search, library)]
    assert ranked.index(vector_second.path) < ranked.index(incidental.path)
    legs.fulltext = [(best, 10.0), (incidental, 10.0 * FULLTEXT_FLOOR)]
    ranked = [path for path, _ in order(search, library)]
    assert ranked.index(incidental.path) < ranked.index(vector_second.path)


def test_the_rest_follow_scored_zero_in_the_order_of_whole_legs(
    arranged: tuple[LibrarySearch, ArrangedLegs, list[Chunk], object],
) -> None:
    """A large `limit` still gets every candidate: past the fused ones come those beyond every
    leg's depth (and weak full-text hits), ordered by their sum over the whole legs, at 0."""
    search, legs, chunks, library = arranged
    legs.vector = chunks[:50]
    legs.fulltext = [(c, 1.0) for c in reversed(chunks[30:])]  # chunks[59] first
    ranked = order(search, library, limit=200)
    assert len(ranked) == DOCS
    head = [(p, s) for p, s in ranked if s > 0]
    tail = [p for p, s in ranked if s == 0]
    assert {p for p, _ in head} == {c.path for c in [*chunks[:RRF_DEPTH], *chunks[-RRF_DEPTH:]]}
    assert [s for _, s in head] == sorted((s for _, s in head), reverse=True)
    # In the tail, chunks 30-39 (in both legs, past both depths) lead the ones in one leg only.
    assert set(tail[:10]) == {c.path for c in chunks[30:40]}
    assert ranked.index((tail[0], 0.0)) == len(head)


def test_full_text_hits_far_from_the_query_in_meaning_are_not_fused(
    arranged: tuple[LibrarySearch, ArrangedLegs, list[Chunk], object],
) -> None:
    """A chunk full text found (at the top of its leg) but whose cosine with the query is under
    FULLTEXT_MEANING of the vector leg's best (0.899) shares the query's words, not its subject:
    it gains nothing from them; just above that share, the same chunk leads."""
    search, legs, chunks, library = arranged
    worded, meant = chunks[0], chunks[1:10]
    legs.vector = list(meant)
    legs.fulltext = [(worded, 10.0)]
    legs.cosine = {worded.id: 0.899 * FULLTEXT_MEANING - 0.05}
    ranked = [path for path, _ in order(search, library)]
    assert ranked[: len(meant)] == [c.path for c in meant]
    legs.cosine = {worded.id: 0.899 * FULLTEXT_MEANING + 0.05}
    ranked = [path for path, _ in order(search, library)]
    assert ranked[0] == worded.path


def test_the_meaning_check_scales_with_the_best_match(
    arranged: tuple[LibrarySearch, ArrangedLegs, list[Chunk], object],
) -> None:
    """A question asked in other words has a low best cosine (0.299 here). A full-text hit at 0.12
    is nearer that best than a fixed 0.30 would allow for, yet it is under half of it: an
    incidental shared word, left out. At 0.2 it is about the same subject and leads."""
    search, legs, chunks, library = arranged
    worded, meant = chunks[0], chunks[1:10]
    legs.top = 0.3
    legs.vector = list(meant)
    legs.fulltext = [(worded, 10.0)]
    legs.cosine = {worded.id: 0.12}
    ranked = [path for path, _ in order(search, library)]
    assert ranked[: len(meant)] == [c.path for c in meant]
    legs.cosine = {worded.id: 0.2}
    ranked = [path for path, _ in order(search, library)]
    assert ranked[0] == worded.path
