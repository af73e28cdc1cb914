"""Weighted reciprocal rank fusion (Cormack, Clarke & Buettcher 2009).

score(id) = Σ over legs of weight_leg / (rrf_k + rank_leg(id)), ranks 1-based. Legs commute.
Ties break deterministically: the better best rank first, then the id. Legs may rank row numbers
instead of ids (SqliteChunkIndex: it then reads only the fused head's rows); `fused_head` is then
given the ids' lookup, which it calls only for items tied with another in the head.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", str, int)


@dataclass(frozen=True)
class Leg(Generic[K]):
    """One ranked list of ids, best first, and the weight its contributions get."""

    ids: Sequence[K]
    weight: float = 1.0


@dataclass(frozen=True)
class Fused(Generic[K]):
    id: K
    score: float
    ranks: tuple[int | None, ...]  # 1-based rank in each leg, None when absent

    @property
    def best_rank(self) -> int:
        return min(rank for rank in self.ranks if rank is not None)


def fuse(legs: Sequence[Leg[K]], rrf_k: int = 60, limit: int | None = None) -> list[Fused[K]]:
    """Fuse ranked lists; best first, at most `limit`. A repeated id in one leg keeps its first rank."""
    if rrf_k < 0:
        raise ValueError("rrf_k must be >= 0")
    scores: dict[K, float] = {}
    best: dict[K, int] = {}
    ranks: dict[K, list[int | None]] = {}
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


def fused_head(
    legs: Sequence[Leg[K]],
    rrf_k: int,
    top_k: int,
    nearest: int = 0,
    leg: int = 1,
    names: Callable[[list[K]], Mapping[K, str]] | None = None,
) -> list[Fused[K]]:
    """The fusion's first `top_k`, then the first `nearest` ids of `legs[leg]` that it ranked past
    them, in that leg's order (ChunkQuery.nearest). With `names` (item → the id ties break by), the
    items fused are stand-ins, such as row numbers."""
    fused = fuse(legs, rrf_k)
    if names is not None:
        fused = _ties_by_name(fused, top_k, names)
    head = fused[:top_k]
    if nearest <= 0:
        return head
    rest = {f.id: f for f in fused[top_k:]}
    return head + [rest[i] for i in list(dict.fromkeys(legs[leg].ids))[:nearest] if i in rest]


def _ties_by_name(
    fused: list[Fused[K]], top_k: int, names: Callable[[list[K]], Mapping[K, str]]
) -> list[Fused[K]]:
    """`fused` with each run of equal score and best rank that starts in the head ordered by name:
    the order `fuse` gives items that are their own names."""
    runs: list[tuple[int, int]] = []
    start = 0
    while start < min(top_k, len(fused)):
        end = start + 1
        key = (fused[start].score, fused[start].best_rank)
        while end < len(fused) and (fused[end].score, fused[end].best_rank) == key:
            end += 1
        if end - start > 1:
            runs.append((start, end))
        start = end
    if not runs:
        return fused
    named = names([f.id for a, b in runs for f in fused[a:b]])
    out = list(fused)
    for a, b in runs:
        out[a:b] = sorted(fused[a:b], key=lambda f: named.get(f.id, ""))
    return out
