"""think offline, one mode at a time: content built from the problem's own words, confidence from
how much the input specifies, deterministic, honest, and memories read as background."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.domain.errors import InvalidInput
from cairn.services.thoughtmcp.reasoning.context import RelevantMemory
from cairn.services.thoughtmcp.reasoning.models import ThinkResult
from cairn.services.thoughtmcp.reasoning.service import ReasoningService
from tests.unit.reasoning.fakes import FakeMemories

PROBLEM = "How to optimize database query performance?"
CONTEXT: dict[str, Any] = {
    "background": "PostgreSQL database with 1M records",
    "constraints": ["No schema changes", "Minimal downtime"],
    "goals": ["Reduce p95 latency to <100ms"],
}
MODES = ["analytical", "creative", "critical", "synthetic"]


def think(mode: str, problem: str = PROBLEM, context: dict[str, Any] | None = CONTEXT, **kw: Any) -> dict:
    data = ReasoningService(ExtractiveGenerator(), **kw).think(problem, mode, context=context)
    ThinkResult.model_validate(data)
    return data


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_is_rule_based_complete_fast_and_deterministic(mode: str) -> None:
    started = time.perf_counter()
    first = think(mode)
    assert time.perf_counter() - started < 0.2
    second = think(mode)
    assert (first["method"], first["model"], first["status"]) == ("rule-based", None, "completed")
    assert first["mode"] == mode and first["memoriesUsed"] == []
    assert all(isinstance(i, str) for i in first["insights"]) and first["reasoning"]
    for data in (first, second):
        data.pop("processingTime")
    assert first == second


def test_analytical_names_the_parts_constraints_goals_and_main_part() -> None:
    data = think("analytical", "Design the schema, then build the API and write tests", None)
    assert "Design the schema; Build the API; Write tests" in " ".join(data["reasoning"])
    assert data["conclusion"].startswith("Work on 'Design the schema' first")
    specified = think("analytical")
    text = " ".join(specified["reasoning"] + specified["insights"])
    assert "No schema changes" in text and "Reduce p95 latency to <100ms" in text
    assert "judge the result by 'Reduce p95 latency to <100ms'" in specified["conclusion"]


def test_creative_reframes_with_the_constraints_and_parts() -> None:
    data = think("creative")
    assert any(i.startswith("Drop 'No schema changes'") for i in data["insights"])
    assert any(i.startswith("Invert it") and "database query performance" in i for i in data["insights"])
    parts = think("creative", "Design the schema, then build the API and write tests", None)
    assert any("'Design the schema' and 'Build the API'" in i for i in parts["insights"])


def test_critical_finds_hedges_absolutes_and_missing_evidence() -> None:
    data = think(
        "critical",
        "Should we rewrite the billing service? It is probably the cache, and users always complain.",
        None,
    )
    text = " ".join(data["insights"])
    assert "'probably' marks a guess" in text
    assert "'always' is an absolute claim" in text
    assert "presumes that 'rewrite the billing service' would help" in text
    assert "No background is given" in text
    assert any(r.startswith("Counter-question:") for r in data["reasoning"])


def test_synthetic_connects_goals_and_constraints_into_one_plan() -> None:
    data = think(
        "synthetic",
        "Design the schema, then build the API and write tests",
        {"goals": ["A tested API"], "constraints": ["Two weeks"]},
    )
    assert data["conclusion"].startswith("Plan: Design the schema, then build the API, then write tests")
    assert "'A tested API'" in data["conclusion"] and "'Two weeks'" in data["conclusion"]
    assert any("'A tested API' is served by step" in i for i in data["insights"])


@pytest.mark.parametrize("mode", MODES)
def test_confidence_grows_with_what_the_input_specifies(mode: str) -> None:
    bare = think(mode, "Improve the thing", None)["confidence"]
    assert think(mode)["confidence"] > bare


def test_memories_are_fetched_for_a_user_and_read_as_background() -> None:
    memories = FakeMemories(
        [RelevantMemory("m1", "The orders table has no index on customer_id", "semantic", 0.9)]
    )
    service = ReasoningService(ExtractiveGenerator(), memories)
    data = service.think(PROBLEM, "analytical", user_id="u1")
    assert memories.calls == [("u1", PROBLEM, 5)]
    assert data["memoriesUsed"] == [
        {
            "id": "m1",
            "content": "The orders table has no index on customer_id",
            "primarySector": "semantic",
            "relevanceScore": 0.9,
        }
    ]
    assert any("no index on customer_id" in i for i in data["insights"])
    assert service.think(PROBLEM, "analytical")["memoriesUsed"] == []  # no user id: none fetched
    assert len(memories.calls) == 1


def test_bad_mode_and_empty_problem_are_refused() -> None:
    service = ReasoningService(ExtractiveGenerator())
    with pytest.raises(InvalidInput, match="mode"):
        service.think(PROBLEM, "lateral")
    with pytest.raises(InvalidInput, match="problem is required"):
        service.think("  ", "analytical")
