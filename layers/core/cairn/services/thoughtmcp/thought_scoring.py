"""ThoughtMCP's numbers, as its server computes them: salience, decay and reinforcement of strength,
waypoint link weights and types, and recall's composite score. Pure functions (no storage).

- **Salience** of new content: 0.5 + 0.1 per high-salience word it contains (substring match,
  lower-cased), at most 1.0; averaged with the caller's importance when one is given.
- **Strength** starts at 1.0 and decays exponentially with the days since the memory was last
  accessed: s · exp(-λ · days), λ = 0.02 × the sector's multiplier, never below DECAY_FLOOR (a
  soft-forgotten memory's 0 stays 0). An access reinforces it by REINFORCEMENT (half that when the
  last reinforcement was within the hour), at most 1.0.
- **Waypoint weight** between two memories of a user: 0.6·cosine + 0.25·metadata overlap +
  0.10·temporal proximity + 0.05·mean salience, where overlap = 0.4·Jaccard(keywords) +
  0.4·Jaccard(tags) + 0.2·(same category) and proximity is 0 across sessions, else 1.0 / 0.5 / 0.1
  for under 5 min / under 30 min / later. A link needs WAYPOINT_THRESHOLD.
- **Composite score**: with query text 0.6·similarity + 0.2·salience + 0.1·recency + 0.1·linkWeight;
  without 0.4·salience + 0.3·recency + 0.3·linkWeight; recency = max(0, 1 - age/365 days); every
  part clamped to 0..1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

SECTORS: Final = ("episodic", "semantic", "procedural", "emotional", "reflective")
SALIENT_WORDS: Final = (
    "important", "urgent", "critical", "essential", "vital", "crucial", "emergency", "priority",
    "significant", "major",
)  # fmt: skip
BASE_DECAY: Final = 0.02
SECTOR_DECAY: Final = {
    "episodic": 1.5,
    "semantic": 0.5,
    "procedural": 0.7,
    "emotional": 1.2,
    "reflective": 0.8,
}
DECAY_FLOOR: Final = 0.1
REINFORCEMENT: Final = 0.3
REINFORCEMENT_WINDOW_S: Final = 3600.0
WAYPOINT_THRESHOLD: Final = 0.7
YEAR_DAYS: Final = 365.0
_DAY_S: Final = 86_400.0
CAUSE_WORDS: Final = frozenset({"action", "click", "trigger", "start", "initiate", "cause"})
EFFECT_WORDS: Final = frozenset({"result", "submit", "effect", "complete", "response", "outcome"})
ANALOGICAL_CATEGORIES: Final = frozenset({frozenset({"parent", "child"}), frozenset({"project", "task"})})


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def initial_salience(content: str, importance: float | None) -> float:
    lowered = content.lower()
    salience = min(1.0, 0.5 + 0.1 * sum(1 for word in SALIENT_WORDS if word in lowered))
    if importance is not None:
        salience = (salience + importance) / 2
    return clamp(salience)


def decay_rate(sector: str) -> float:
    return BASE_DECAY * SECTOR_DECAY.get(sector, 1.0)


def decayed(strength: float, sector: str, last_access: datetime, now: datetime) -> float:
    """Strength now, after decay since the last access (0 stays 0: a soft-forgotten memory)."""
    if strength <= 0:
        return 0.0
    days = max(0.0, (now - last_access).total_seconds() / _DAY_S)
    return clamp(max(DECAY_FLOOR, strength * math.exp(-decay_rate(sector) * days)))


def reinforced(strength: float, last_reinforced: datetime | None, now: datetime) -> float:
    """Strength after an access (a soft-forgotten memory is not revived by being read)."""
    if strength <= 0:
        return 0.0
    recent = last_reinforced is not None and (now - last_reinforced).total_seconds() < REINFORCEMENT_WINDOW_S
    return clamp(strength + (REINFORCEMENT / 2 if recent else REINFORCEMENT))


def recency(created_at: datetime, now: datetime) -> float:
    age_days = max(0.0, (now - created_at).total_seconds() / _DAY_S)
    return clamp(1.0 - age_days / YEAR_DAYS)


@dataclass(frozen=True)
class Score:
    total: float
    similarity: float
    salience: float
    recency: float
    link_weight: float

    def wire(self) -> dict[str, float]:
        return {
            "total": round(self.total, 6),
            "similarity": round(self.similarity, 6),
            "salience": round(self.salience, 6),
            "recency": round(self.recency, 6),
            "linkWeight": round(self.link_weight, 6),
        }


def composite(similarity: float | None, salience: float, recency_: float, link_weight: float) -> Score:
    """Recall's score: with query text (a similarity) or without (None)."""
    sal, rec, link = clamp(salience), clamp(recency_), clamp(link_weight)
    if similarity is None:
        return Score(0.4 * sal + 0.3 * rec + 0.3 * link, 0.0, sal, rec, link)
    sim = clamp(similarity)
    return Score(0.6 * sim + 0.2 * sal + 0.1 * rec + 0.1 * link, sim, sal, rec, link)


@dataclass(frozen=True)
class WaypointSide:
    """What the weight of a waypoint link reads of one memory."""

    session_id: str
    created_at: datetime
    salience: float
    keywords: Sequence[str]
    tags: Sequence[str]
    category: str | None


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    left, right = {x.lower() for x in a}, {x.lower() for x in b}
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def metadata_overlap(a: WaypointSide, b: WaypointSide) -> float:
    same = 1.0 if a.category and b.category and a.category.lower() == b.category.lower() else 0.0
    return 0.4 * jaccard(a.keywords, b.keywords) + 0.4 * jaccard(a.tags, b.tags) + 0.2 * same


def temporal_proximity(a: WaypointSide, b: WaypointSide) -> float:
    if a.session_id != b.session_id:
        return 0.0
    apart = abs((a.created_at - b.created_at).total_seconds())
    return 1.0 if apart < 300 else 0.5 if apart < 1800 else 0.1


def waypoint_weight(cosine: float, a: WaypointSide, b: WaypointSide) -> float:
    return clamp(
        0.6 * clamp(cosine)
        + 0.25 * metadata_overlap(a, b)
        + 0.10 * temporal_proximity(a, b)
        + 0.05 * (a.salience + b.salience) / 2
    )


def link_type(a: WaypointSide, b: WaypointSide) -> str:
    """analogical (parent/child or project/task categories), causal (a cause keyword on one side,
    an effect keyword on the other), temporal (same session, close in time), else semantic."""
    categories = {c.lower() for c in (a.category, b.category) if c}
    if any(pair <= categories for pair in ANALOGICAL_CATEGORIES):
        return "analogical"
    words_a, words_b = {k.lower() for k in a.keywords}, {k.lower() for k in b.keywords}
    if (words_a & CAUSE_WORDS and words_b & EFFECT_WORDS) or (
        words_b & CAUSE_WORDS and words_a & EFFECT_WORDS
    ):
        return "causal"
    if temporal_proximity(a, b) >= 0.5:
        return "temporal"
    return "semantic"
