"""How a memory's relevance to a query is weighed by what it is and how it has been used.

    effective = (score or 0.5) x effective_confidence x (1 + 0.3 log2(access_count + 1)) x importance

`score` is the vector leg's similarity mapped to 0..1 ((1 + cosine) / 2); a keyword-only hit has
none and counts as 0.5. Facts and statuses lose confidence by 2 % a day since they were last
read (or written): knowledge nobody consults goes stale; events and decisions record what
happened and do not decay. Importance is a weight in 0..1 (critical 1.0, high 0.85, medium 0.7,
low 0.5). Rounded to 4 places, as scores are shown.
"""

from __future__ import annotations

import math
from datetime import datetime

from cairn.domain.models import MemoryFacet, MemoryType

IMPORTANCE = {"critical": 1.0, "high": 0.85, "medium": 0.7, "low": 0.5}
DEFAULT_IMPORTANCE = IMPORTANCE["medium"]
DECAY_FACTOR = 0.98
DECAYING = (MemoryType.fact, MemoryType.status)
ACCESS_BOOST = 0.3
UNSCORED = 0.5


def importance_name(weight: float | None) -> str:
    """The named level a weight stands for (the nearest one)."""
    value = DEFAULT_IMPORTANCE if weight is None else weight
    return min(IMPORTANCE, key=lambda name: abs(IMPORTANCE[name] - value))


def similarity_score(cosine: float | None) -> float | None:
    return None if cosine is None else (1.0 + cosine) / 2.0


def effective_confidence(
    memory: MemoryFacet | None, created_at: datetime, last_access: datetime | None, now: datetime
) -> float:
    confidence = 1.0
    if memory is None or memory.type not in DECAYING:
        return confidence
    since = max(t for t in (created_at, last_access) if t is not None)
    days = max(0.0, (now - since).total_seconds() / 86_400)
    return confidence * DECAY_FACTOR**days


def effective_score(
    score: float | None, confidence: float, access_count: int, importance: float | None
) -> float:
    weight = DEFAULT_IMPORTANCE if importance is None else importance
    boost = 1.0 + ACCESS_BOOST * math.log2(max(access_count, 0) + 1)
    return round((score or UNSCORED) * confidence * boost * weight, 4)
