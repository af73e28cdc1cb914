"""The effective score: similarity x decayed confidence x access boost x importance weight."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.models import MemoryFacet, MemoryType
from cairn.services.memory.memory_ranking import (
    IMPORTANCE,
    effective_confidence,
    effective_score,
    importance_name,
    similarity_score,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_the_formula_multiplies_its_four_factors() -> None:
    assert effective_score(0.8, 1.0, 0, 1.0) == 0.8
    assert effective_score(0.8, 0.5, 0, 1.0) == 0.4
    assert effective_score(0.8, 1.0, 3, 1.0) == round(0.8 * (1 + 0.3 * math.log2(4)), 4)  # 1.28
    assert effective_score(0.8, 1.0, 0, IMPORTANCE["low"]) == 0.4
    assert effective_score(None, 1.0, 0, 1.0) == 0.5  # a keyword-only hit counts as 0.5
    assert effective_score(0.8, 1.0, 0, None) == round(0.8 * 0.7, 4)  # unset importance: medium


DECAY = [
    (MemoryType.fact, True),
    (MemoryType.status, True),
    (MemoryType.event, False),
    (MemoryType.decision, False),
]


@pytest.mark.parametrize(("kind", "decays"), DECAY)
def test_facts_and_statuses_decay_two_percent_a_day_since_last_read(kind: MemoryType, decays: bool) -> None:
    facet = MemoryFacet(type=kind)
    written = NOW - timedelta(days=10)

    unread = effective_confidence(facet, written, None, NOW)
    read_yesterday = effective_confidence(facet, written, NOW - timedelta(days=1), NOW)

    assert unread == pytest.approx(0.98**10 if decays else 1.0)
    assert read_yesterday == pytest.approx(0.98 if decays else 1.0)
    assert effective_confidence(None, written, None, NOW) == 1.0  # a plain document


def test_similarity_maps_cosine_to_zero_one_and_names_round_trip() -> None:
    assert similarity_score(1.0) == 1.0 and similarity_score(-1.0) == 0.0 and similarity_score(0.0) == 0.5
    assert similarity_score(None) is None
    assert [importance_name(IMPORTANCE[n]) for n in IMPORTANCE] == list(IMPORTANCE)
    assert importance_name(None) == "medium" and importance_name(0.95) == "critical"
