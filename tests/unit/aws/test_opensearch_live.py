"""Checks only a real cluster can answer (skipped unless OPENSEARCH_URL is set; see aws_opensearch.py).

The contract suite covers the port; these cover what the fake cluster takes on trust: the
analyzer's stemming and folding, and that the cluster's RRF pipeline orders a two-leg query as
the client-side fusion does, with the same scores.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.contract.aws_opensearch import live_index
from tests.contract.test_chunk_index_contract import axis, chunk, query, toward


def test_the_analyzer_stems_and_folds(request: pytest.FixtureRequest) -> None:
    with live_index(request, "client") as index:
        index.upsert(
            [chunk("a", "She was running to the Café"), chunk("b", "other")], np.stack([axis(0), axis(1)])
        )
        assert [h.chunk.id for h in index.search(query("runs cafe"))] == ["a"]


def test_the_rrf_pipeline_fuses_like_the_client(request: pytest.FixtureRequest) -> None:
    chunks = [chunk(f"c{i}", f"lantern {'lantern ' * (i % 4)} harbour {i}") for i in range(12)]
    vectors = np.stack([toward(0, 1 + i % 5, i / 12) for i in range(12)])
    options = {"top_k": 8, "candidate_pool": 10, "rrf_k": 20}
    results = {}
    for fusion in ("client", "pipeline"):
        with live_index(request, fusion) as index:
            index.upsert(chunks, vectors)
            results[fusion] = [
                (h.chunk.id, round(h.score, 5)) for h in index.search(query("lantern", axis(0), **options))
            ]
    assert results["pipeline"] == results["client"]
