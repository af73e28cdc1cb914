"""The effective score: calibrated relevance x importance x decayed confidence x reads, the three
modifiers squeezed into narrow bands so relevance comes first."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.models import MemoryFacet, MemoryType
from cairn.services.memory.memory_ranking import (
    IMPORTANCE,
    effective_confidence,
    effective_score,
    importance_name,
    read_rank,
)
from cairn.services.search.relevance import EMBEDDED, GOOD_MATCH

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_the_formula_multiplies_relevance_by_its_bounded_factors() -> None:
    assert effective_score(0.8, 1.0, 1.0) == 0.8  # critical and fresh: relevance itself
    assert effective_score(0.8, 0.5, 1.0) == round(0.8 * 0.95, 4)
    assert effective_score(0.8, 0.0, 1.0) == round(0.8 * 0.9, 4)  # long unread: at most -10 %
    assert effective_score(0.8, 1.0, IMPORTANCE["low"]) == round(0.8 * 0.925, 4)
    assert effective_score(0.8, 1.0, None) == round(0.8 * (0.85 + 0.15 * 0.7), 4)  # unset: medium


def test_reads_only_break_ties_and_saturate() -> None:
    assert [read_rank(n) for n in (-1, 0, 3, 7, 8, 10_000)] == [0, 0, 3, 7, 7, 7]


def test_no_importance_or_decay_lifts_an_unrelated_memory_above_a_good_match() -> None:
    bands = list(itertools.product((0.0, 1e-6, 0.5, 1.0), (0.5, 0.7, 0.85, 1.0)))
    strongest_unrelated = max(effective_score(EMBEDDED(0.30), c, i) for c, i in bands)
    weakest_good = min(effective_score(GOOD_MATCH, c, i) for c, i in bands)
    assert strongest_unrelated < weakest_good


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


def test_importance_names_round_trip() -> None:
    assert [importance_name(IMPORTANCE[n]) for n in IMPORTANCE] == list(IMPORTANCE)
    assert importance_name(None) == "medium" and importance_name(0.95) == "critical"
