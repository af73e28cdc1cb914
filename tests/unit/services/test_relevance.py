"""Calibrated relevance (services/search/relevance.py): a logistic curve over the cosine, with the
cosine of a keyword-only hit read from its stored vector."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.ports.chunks import ChunkHit
from cairn.services.search.relevance import GOOD_MATCH, MIDPOINT, judge, relevance


def test_the_curve_is_monotone_and_crosses_the_line_at_its_midpoint() -> None:
    cosines = [-1.0, 0.0, 0.2, 0.3, MIDPOINT, 0.5, 0.6, 1.0]
    values = [relevance(c) for c in cosines]
    assert values == sorted(values) and all(0.0 < v < 1.0 for v in values)
    assert relevance(MIDPOINT) == pytest.approx(GOOD_MATCH)
    assert relevance(0.2) < 0.1 < 0.9 < relevance(0.6)


def test_a_hit_without_a_similarity_gets_the_cosine_of_its_stored_vector(
    container: Container, brain: Brain
) -> None:
    text = "The billing database is backed up every night at two."
    container.documents.write(brain, "notes/billing.md", text.encode())
    (chunk,) = container.adapters.chunks.get_chunks(
        brain.id, container.documents.get(brain, "notes/billing.md").id
    )
    vector = container.adapters.embedder.embed([chunk.text])[0].tolist()
    keyword_only = ChunkHit(chunk=chunk, score=0.01, bm25_rank=1)
    from_vectors = replace(keyword_only, vector_similarity=0.25, vector_rank=1)
    gone = ChunkHit(chunk=chunk.model_copy(update={"id": "chk_gone"}), score=0.01, bm25_rank=2)

    judged = judge(container.adapters.chunks, [keyword_only, from_vectors, gone], vector)

    assert [j.hit for j in judged] == [keyword_only, from_vectors, gone]  # in their order
    assert judged[0].similarity == pytest.approx(1.0, abs=1e-3)  # its own text: the same vector
    assert judged[0].relevance == pytest.approx(relevance(judged[0].similarity))
    assert judged[1].similarity == 0.25 and judged[2].similarity == 0.0
