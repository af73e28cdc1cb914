"""think mode=parallel and ponder: four streams at once, merged; slow streams reported as timed out."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.domain.errors import InvalidInput
from cairn.services.thoughtmcp.reasoning.llm import ReasoningFailed
from cairn.services.thoughtmcp.reasoning.models import ParallelResult
from cairn.services.thoughtmcp.reasoning.service import ReasoningService
from tests.unit.reasoning.fakes import PerCallGenerator

PROBLEM = "How to optimize database query performance?"
CONTEXT: dict[str, Any] = {
    "background": "PostgreSQL database with 1M records",
    "constraints": ["No schema changes"],
    "goals": ["Reduce p95 latency to <100ms"],
}


def stream_reply(prompt: str) -> dict[str, Any]:
    name = next(n for n in ("analytical", "creative", "critical", "synthetic") if f"the {n} stream" in prompt)
    return {
        "conclusion": f"{name} conclusion",
        "reasoning": [f"{name} step"],
        "insights": [f"{name} insight", "Indexes on filtered columns are missing"],
        "recommendations": [f"{name} recommendation"],
        "risks": ["Index builds lock the table"] if name == "critical" else [],
        "confidence": 0.8,
    }


def test_offline_parallel_merges_all_four_streams() -> None:
    data = ReasoningService(ExtractiveGenerator()).think(PROBLEM, "parallel", context=CONTEXT)
    ParallelResult.model_validate(data)
    assert (data["method"], data["model"]) == ("rule-based", None)
    assert [s["status"] for s in data["streams"]] == ["completed"] * 4
    assert {src for i in data["insights"] for src in i["sources"]} == {
        "analytical",
        "creative",
        "critical",
        "synthetic",
    }
    assert [r["priority"] for r in data["recommendations"]] == list(
        range(1, len(data["recommendations"]) + 1)
    )
    assert data["conflicts"] and all(0 <= c["severity"] <= 1 for c in data["conflicts"])
    assert data["conclusion"].startswith("Plan:")  # the synthetic stream's
    assert 0 < data["confidence"] < 1 and 0 < data["quality"] <= 1


def test_conflicts_lower_the_confidence() -> None:
    data = ReasoningService(ExtractiveGenerator()).think(PROBLEM, "parallel", context=CONTEXT)
    stream_mean = sum(s["confidence"] for s in data["streams"]) / 4
    assert data["confidence"] < round(stream_mean, 2)


def test_offline_ponder_is_deterministic_and_fast() -> None:
    service = ReasoningService(ExtractiveGenerator())
    started = time.perf_counter()
    first = service.ponder(PROBLEM, context=CONTEXT)
    assert time.perf_counter() - started < 0.2
    second = service.ponder(PROBLEM, context=CONTEXT)
    for data in (first, second):
        data.pop("processingTime")
        for stream in data["streams"]:
            stream.pop("processingTime")
        for conflict in data["conflicts"]:
            assert conflict.pop("detectedAt").endswith("Z")
    assert first == second


def test_duplicate_insights_are_merged_with_their_sources() -> None:
    generator = PerCallGenerator(stream_reply)
    data = ReasoningService(generator).think(PROBLEM, "parallel")
    shared = [i for i in data["insights"] if i["content"] == "Indexes on filtered columns are missing"]
    assert len(shared) == 1 and shared[0]["sources"] == ["analytical", "creative", "critical", "synthetic"]


def test_the_four_streams_run_concurrently() -> None:
    generator = PerCallGenerator(stream_reply, delay=lambda prompt: 0.2)
    started = time.perf_counter()
    data = ReasoningService(generator).think(PROBLEM, "parallel")
    elapsed = time.perf_counter() - started
    assert len(generator.prompts) == 4
    assert elapsed < 0.6, f"four 0.2 s streams took {elapsed:.2f} s"
    assert (data["method"], data["model"]) == ("language-model", "fake-llm")


def test_ponder_reports_the_streams_its_timeout_cut_off() -> None:
    generator = PerCallGenerator(
        stream_reply, delay=lambda prompt: 5.0 if "the critical stream" in prompt else 0.0
    )
    started = time.perf_counter()
    data = ReasoningService(generator).ponder(PROBLEM, timeout_ms=1000)
    assert time.perf_counter() - started < 2.0
    status = {s["name"]: s["status"] for s in data["streams"]}
    assert status == {
        "analytical": "completed",
        "creative": "completed",
        "critical": "timeout",
        "synthetic": "completed",
    }
    assert all("critical" not in i["sources"] for i in data["insights"])


def test_ponder_fails_when_no_stream_completes() -> None:
    generator = PerCallGenerator(stream_reply, delay=lambda prompt: 5.0)
    with pytest.raises(ReasoningFailed, match="no reasoning stream completed") as caught:
        ReasoningService(generator).ponder(PROBLEM, timeout_ms=1000)
    assert caught.value.code == "reasoning_failed"


@pytest.mark.parametrize("timeout", [999, 60001, 0])
def test_ponder_timeout_outside_the_range_is_refused(timeout: int) -> None:
    with pytest.raises(InvalidInput, match="timeout"):
        ReasoningService(ExtractiveGenerator()).ponder(PROBLEM, timeout_ms=timeout)
