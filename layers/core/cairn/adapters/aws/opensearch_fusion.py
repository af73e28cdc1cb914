"""Fusing the two legs into ChunkHits, on the client or by the cluster's RRF search pipeline.

Client fusion takes each leg's ranked hits (one `_msearch` round trip) and fuses them with the
embedded index's weighted RRF (`local/rrf.py`): every hit carries its rank in each leg, its BM25
score and its cosine similarity, any `rrf_k` >= 0 and any leg weights work, ties break the same
way.

Server fusion is a `hybrid` query fused by `score-ranker-processor`, which computes
Σ weight_leg / (rank_constant + rank_leg) (neural-search's RRF normalisation then combination). Its
response carries only the fused score: per-leg ranks and raw scores are not returned (None in
the hits). Its weights must lie in [0, 1] and sum to 1, so they are the leg weights divided by
their sum, and the fused score is multiplied back by that sum to equal the embedded index's
score. Weights need OpenSearch 3.1+; the rank constant must be 1..10000, so a query with
rrf_k 0 is fused on the client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cairn.adapters.aws.opensearch_schema import Body, from_source, pipeline_body, similarity
from cairn.adapters.local.rrf import Leg, fused_head
from cairn.ports.chunks import ChunkHit, ChunkQuery

MAX_RANK_CONSTANT = 10_000


@dataclass(frozen=True)
class LegHit:
    id: str
    score: float
    source: Mapping[str, Any]


def leg_hits(response: Mapping[str, Any]) -> list[LegHit]:
    """A leg's hits, best first; a chunk listed twice keeps its first place."""
    seen: dict[str, LegHit] = {}
    for hit in response["hits"]["hits"]:
        if hit["_id"] not in seen:
            seen[hit["_id"]] = LegHit(hit["_id"], float(hit["_score"]), hit["_source"])
    return list(seen.values())


def fuse_legs(bm25: Sequence[LegHit], knn: Sequence[LegHit], query: ChunkQuery) -> list[ChunkHit]:
    legs = [Leg([h.id for h in bm25], query.bm25_weight), Leg([h.id for h in knn], query.vector_weight)]
    sources = {h.id: h.source for h in [*knn, *bm25]}
    bm25_scores = {h.id: h.score for h in bm25}
    similarities = {h.id: similarity(h.score) for h in knn}
    return [
        ChunkHit(
            chunk=from_source(sources[f.id]),
            score=f.score,
            bm25_rank=f.ranks[0],
            vector_rank=f.ranks[1],
            bm25_score=bm25_scores.get(f.id),
            vector_similarity=similarities.get(f.id),
        )
        for f in fused_head(legs, query.rrf_k, query.top_k, query.nearest)
    ]


@dataclass(frozen=True)
class ServerFusion:
    """How the cluster fuses a two-leg query: the stored pipeline, or an inline variant."""

    inline: Body | None  # None: name the stored pipeline in the request
    scale: float  # multiplies the fused score back to Σ leg_weight / (rrf_k + rank)


def server_fusion(query: ChunkQuery, stored_rank_constant: int, *, weighted: bool) -> ServerFusion | None:
    """The pipeline for this query's rrf_k and weights; None when only the client can fuse it.

    `weighted`: the cluster accepts per-sub-query weights (OpenSearch 3.1+).
    """
    if not 1 <= query.rrf_k <= MAX_RANK_CONSTANT:
        return None
    bm25_weight, vector_weight = query.bm25_weight, query.vector_weight
    if bm25_weight == vector_weight:
        if query.rrf_k == stored_rank_constant:
            return ServerFusion(None, bm25_weight)
        return ServerFusion(pipeline_body(rank_constant=query.rrf_k), bm25_weight)
    if not weighted:
        return None
    total = bm25_weight + vector_weight
    share = round(bm25_weight / total, 6)
    weights = (share, round(1.0 - share, 6))
    return ServerFusion(pipeline_body(rank_constant=query.rrf_k, weights=weights), total)


def pipeline_hits(response: Mapping[str, Any], scale: float) -> list[ChunkHit]:
    """The hybrid query's hits, best first (equal scores by chunk id, for a stable order)."""
    hits = sorted(response["hits"]["hits"], key=lambda hit: (-float(hit["_score"]), hit["_id"]))
    return [ChunkHit(chunk=from_source(hit["_source"]), score=scale * float(hit["_score"])) for hit in hits]
