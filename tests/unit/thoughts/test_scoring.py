"""ThoughtMCP's numbers (services/thoughtmcp/thought_scoring.py) checked against values computed by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from cairn.services.thoughtmcp import thought_scoring as ts

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_composite_with_text_is_point6_similarity_point2_salience_point1_recency_point1_links() -> None:
    created = NOW - timedelta(days=73)  # recency 1 - 73/365 = 0.8
    score = ts.composite(0.9, 0.75, ts.recency(created, NOW), 0.5)
    assert score.recency == pytest.approx(0.8)
    assert score.total == pytest.approx(0.6 * 0.9 + 0.2 * 0.75 + 0.1 * 0.8 + 0.1 * 0.5)  # 0.82
    assert score.total == pytest.approx(0.82)
    assert score.wire() == {
        "total": 0.82,
        "similarity": 0.9,
        "salience": 0.75,
        "recency": 0.8,
        "linkWeight": 0.5,
    }


def test_composite_without_text_is_point4_salience_point3_recency_point3_links() -> None:
    score = ts.composite(None, 0.6, ts.recency(NOW - timedelta(days=365 + 10), NOW), 0.9)
    assert score.recency == 0.0  # older than a year
    assert score.total == pytest.approx(0.4 * 0.6 + 0.3 * 0.0 + 0.3 * 0.9)  # 0.51
    assert score.similarity == 0.0


def test_parts_are_clamped() -> None:
    assert ts.composite(1.4, -0.2, 2.0, 3.0).total == pytest.approx(0.6 + 0.0 + 0.1 + 0.1)


def test_salience_counts_high_salience_words_and_averages_with_importance() -> None:
    assert ts.initial_salience("Buy milk on the way home", None) == 0.5
    assert ts.initial_salience("URGENT: a critical and important fix", None) == pytest.approx(0.8)
    assert ts.initial_salience("urgent critical important vital crucial essential major", None) == 1.0
    assert ts.initial_salience("an important note", 0.8) == pytest.approx((0.6 + 0.8) / 2)


def test_strength_decays_by_sector_and_an_access_reinforces_it() -> None:
    ten_days_ago = NOW - timedelta(days=10)
    episodic = ts.decayed(1.0, "episodic", ten_days_ago, NOW)
    semantic = ts.decayed(1.0, "semantic", ten_days_ago, NOW)
    assert episodic == pytest.approx(math.exp(-0.03 * 10))  # 0.02 x 1.5
    assert semantic == pytest.approx(math.exp(-0.01 * 10))  # 0.02 x 0.5
    assert ts.decayed(1.0, "episodic", NOW - timedelta(days=1000), NOW) == ts.DECAY_FLOOR
    assert ts.decayed(0.0, "episodic", ten_days_ago, NOW) == 0.0  # soft-forgotten stays 0
    assert ts.reinforced(0.5, None, NOW) == pytest.approx(0.8)
    assert ts.reinforced(0.5, NOW - timedelta(minutes=10), NOW) == pytest.approx(
        0.65
    )  # within the hour: half
    assert ts.reinforced(0.9, None, NOW) == 1.0 and ts.reinforced(0.0, None, NOW) == 0.0


def side(session: str = "s1", minutes: float = 0, **kw: object) -> ts.WaypointSide:
    base: dict[str, object] = {"salience": 0.5, "keywords": (), "tags": (), "category": None}
    base.update(kw)
    return ts.WaypointSide(session, NOW + timedelta(minutes=minutes), **base)  # type: ignore[arg-type]


def test_waypoint_weight_by_hand() -> None:
    a = side(keywords=("dark", "mode"), tags=("ui",), category="prefs", salience=0.8)
    b = side(minutes=3, keywords=("dark", "theme"), tags=("ui",), category="prefs", salience=0.6)
    overlap = 0.4 * (1 / 3) + 0.4 * 1.0 + 0.2 * 1.0
    assert ts.metadata_overlap(a, b) == pytest.approx(overlap)
    assert ts.temporal_proximity(a, b) == 1.0
    expected = 0.6 * 0.7 + 0.25 * overlap + 0.10 * 1.0 + 0.05 * 0.7
    assert ts.waypoint_weight(0.7, a, b) == pytest.approx(expected)
    assert (
        ts.temporal_proximity(a, side(minutes=20)) == 0.5
        and ts.temporal_proximity(a, side(minutes=45)) == 0.1
    )
    assert ts.temporal_proximity(a, side("s2")) == 0.0


def test_link_types_in_priority_order() -> None:
    assert ts.link_type(side(category="project"), side(category="task")) == "analogical"
    assert ts.link_type(side("x", keywords=("click",)), side("y", keywords=("result",))) == "causal"
    assert ts.link_type(side(), side(minutes=10)) == "temporal"
    assert ts.link_type(side("x"), side("y")) == "semantic"
