"""How a memory's relevance to a query is weighed by what it is and how it has been used.

    effective = relevance x importance' x confidence'

`relevance` is the calibrated relevance of its best chunk (services/search/relevance.py: 0..1,
0.5 the line of a good match). The zengram formula's other factors are each squeezed into a narrow
band, so that they order comparable matches and never lift an unrelated memory above a relevant
one (together they span at most x1.2):

- importance' = 0.85 + 0.15 x importance (critical 1.0, high 0.85, medium 0.7, low 0.5): 0.925..1;
- confidence' = 0.9 + 0.1 x confidence, where facts and statuses lose confidence by 2 % a day since
  they were last read (or written) and events and decisions do not decay: 0.9..1;
- reads order only memories whose effective scores are equal (to the 4 places shown), by reads
  up to 7 (`read_rank`). As a factor (zengram's 1 + 0.3 log2(reads + 1)) every search raised what
  it returned, until the same memories led every list; even a 1..1.15 band let other searches swap
  the top three of a query. Only good matches count as reads (memory_reads.py).

Rounded to 4 places, as scores are shown.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from cairn.domain.models import MemoryFacet, MemoryType

IMPORTANCE = {"critical": 1.0, "high": 0.85, "medium": 0.7, "low": 0.5}
DEFAULT_IMPORTANCE = IMPORTANCE["medium"]
DECAY_FACTOR = 0.98
DECAYING = (MemoryType.fact, MemoryType.status)
SATURATED_READS: Final = 7


def importance_name(weight: float | None) -> str:
    """The named level a weight stands for (the nearest one)."""
    value = DEFAULT_IMPORTANCE if weight is None else weight
    return min(IMPORTANCE, key=lambda name: abs(IMPORTANCE[name] - value))


def effective_confidence(
    memory: MemoryFacet | None, created_at: datetime, last_access: datetime | None, now: datetime
) -> float:
    confidence = 1.0
    if memory is None or memory.type not in DECAYING:
        return confidence
    since = max(t for t in (created_at, last_access) if t is not None)
    days = max(0.0, (now - since).total_seconds() / 86_400)
    return confidence * DECAY_FACTOR**days


def effective_score(relevance: float, confidence: float, importance: float | None) -> float:
    weight = DEFAULT_IMPORTANCE if importance is None else importance
    return round(relevance * (0.85 + 0.15 * weight) * (0.9 + 0.1 * confidence), 4)


def read_rank(reads: int) -> int:
    """What breaks a tie of effective scores: reads, up to SATURATED_READS."""
    return min(max(reads, 0), SATURATED_READS)
