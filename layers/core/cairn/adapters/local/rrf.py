"""Weighted reciprocal rank fusion (Cormack, Clarke & Buettcher 2009).

score(id) = Σ over legs of weight_leg / (rrf_k + rank_leg(id)), ranks 1-based. Legs commute.
Ties break deterministically: the better best rank first, then the id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Leg:
    """One ranked list of ids, best first, and the weight its contributions get."""

    ids: Sequence[str]
    weight: float = 1.0


@dataclass(frozen=True)
class Fused:
    id: str
    score: float
    ranks: tuple[int | None, ...]  # 1-based rank in each leg, None when absent

    @property
    def best_rank(self) -> int:
        return min(rank for rank in self.ranks if rank is not None)


def fuse(legs: Sequence[Leg], rrf_k: int = 60, limit: int | None = None) -> list[Fused]:
    """Fuse ranked lists; best first, at most `limit`. A repeated id in one leg keeps its first rank."""
    if rrf_k < 0:
        raise ValueError("rrf_k must be >= 0")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    ranks: dict[str, list[int | None]] = {}
    for index, leg in enumerate(legs):
        for rank, item in enumerate(leg.ids, start=1):
            slots = ranks.get(item)
            if slots is None:
                slots = ranks[item] = [None] * len(legs)
                scores[item], best[item] = 0.0, rank
            elif slots[index] is not None:
                continue
            slots[index] = rank
            scores[item] += leg.weight / (rrf_k + rank)
            best[item] = min(best[item], rank)
    order = sorted(scores, key=lambda item: (-scores[item], best[item], item))[:limit]
    return [Fused(item, scores[item], tuple(ranks[item])) for item in order]


def fused_head(legs: Sequence[Leg], rrf_k: int, top_k: int, nearest: int = 0, leg: int = 1) -> list[Fused]:
    """The fusion's first `top_k`, then the first `nearest` ids of `legs[leg]` that it ranked past
    them, in that leg's order (ChunkQuery.nearest)."""
    fused = fuse(legs, rrf_k)
    head = fused[:top_k]
    if nearest <= 0:
        return head
    rest = {f.id: f for f in fused[top_k:]}
    return head + [rest[i] for i in list(dict.fromkeys(legs[leg].ids))[:nearest] if i in rest]
