"""The model path: a validated reply is returned as the model's, one repair attempt with the
validation errors, then ReasoningFailed with a message that never quotes the problem."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn.ports.generator import GenerationError
from cairn.services.thoughtmcp.reasoning.context import RelevantMemory
from cairn.services.thoughtmcp.reasoning.llm import ReasoningFailed
from cairn.services.thoughtmcp.reasoning.models import AnalyzeResult, BreakdownResult, ThinkResult
from cairn.services.thoughtmcp.reasoning.service import ReasoningService
from tests.fakes.generator import ScriptedGenerator
from tests.unit.reasoning.fakes import FakeMemories, PerCallGenerator

SECRET = "Zanzibar quarterly ledger"  # a phrase of the problem that must never reach an error
PROBLEM = f"How do we speed up the {SECRET} export?"
THINK = {
    "conclusion": "Add an index",
    "reasoning": ["Looked at the export"],
    "insights": ["Scans dominate"],
    "confidence": 0.7,
}


def test_a_valid_reply_is_the_models_result() -> None:
    generator = PerCallGenerator([THINK], model_id="llama-test")
    data = ReasoningService(generator).think(PROBLEM, "analytical", context={"goals": ["Under a minute"]})
    ThinkResult.model_validate(data)
    assert (data["method"], data["model"]) == ("language-model", "llama-test")
    assert data["conclusion"] == "Add an index" and data["status"] == "completed"
    assert len(generator.prompts) == 1 and "analytically" in generator.prompts[0]
    texts = [p.text for p in generator.passages[0]]
    assert texts[0] == f"Problem: {PROBLEM}" and "Goals: Under a minute" in texts[1]


def test_a_fenced_reply_from_the_scripted_generator_validates() -> None:
    generator = ScriptedGenerator.answer("```json\n" + json.dumps(THINK) + "\n```", model_id="scripted-llm")
    data = ReasoningService(generator).think(PROBLEM, "critical")
    assert (data["method"], data["model"]) == ("language-model", "scripted-llm")


def test_one_repair_attempt_carries_the_validation_error() -> None:
    bad = {"conclusion": "Add an index", "reasoning": [], "insights": ["x"], "confidence": 3}
    generator = PerCallGenerator([bad, THINK])
    data = ReasoningService(generator).think(PROBLEM, "synthetic")
    assert data["conclusion"] == "Add an index" and data["method"] == "language-model"
    assert len(generator.prompts) == 2
    repair = generator.prompts[1]
    assert "previous reply was rejected" in repair
    assert "reasoning: List should have at least 1 item" in repair
    assert "confidence: Input should be less than or equal to 1" in repair


def test_two_bad_replies_fail_without_quoting_the_problem() -> None:
    generator = PerCallGenerator([f"Sure! The {SECRET} is slow.", f"I think {SECRET}"])
    with pytest.raises(ReasoningFailed) as caught:
        ReasoningService(generator).think(PROBLEM, "analytical")
    assert caught.value.code == "reasoning_failed"
    assert caught.value.message.startswith("think: the model's reply was not the JSON object asked for")
    assert "no JSON in the reply" in caught.value.message
    assert SECRET not in caught.value.message
    assert len(generator.prompts) == 2


def test_a_generation_error_is_reasoning_failed() -> None:
    generator = PerCallGenerator([GenerationError("generation_failed", f"upstream said {SECRET}")])
    with pytest.raises(
        ReasoningFailed, match=r"think: the model failed \(GenerationError generation_failed\)"
    ) as caught:
        ReasoningService(generator).think(PROBLEM, "creative")
    assert SECRET not in caught.value.message


def test_a_slow_model_is_reasoning_failed_in_time() -> None:
    generator = PerCallGenerator([THINK], delay=lambda prompt: 5.0)
    with pytest.raises(ReasoningFailed, match="no reply in time"):
        ReasoningService(generator, timeout_s=0.3).think(PROBLEM, "creative")


def test_analyze_asks_for_the_selected_frameworks_steps() -> None:
    reply = {
        "conclusion": "The pool leaks",
        "steps": ["Define the problem: exports fail"],
        "insights": ["x"],
        "confidence": 0.6,
    }
    generator = PerCallGenerator([reply])
    data = ReasoningService(generator).analyze("Why does the nightly export keep failing?")
    AnalyzeResult.model_validate(data)
    assert data["framework"]["id"] == "root-cause-analysis"
    assert "Ask why" in generator.prompts[0] and "Verify the root cause" in generator.prompts[0]
    assert (data["method"], data["result"]["conclusion"]) == ("language-model", "The pool leaks")


def breakdown_reply(**changes: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "subProblems": [
            {"id": "p1", "name": "Ship it", "description": "Ship the export", "depth": 1, "parent": None},
            {"id": "p1-1", "name": "Index", "description": "Add the index", "depth": 2, "parent": "p1"},
            {"id": "p1-2", "name": "Test", "description": "Test the export", "depth": 2, "parent": "p1"},
        ],
        "dependencies": [{"from": "p1-2", "to": "p1-1", "type": "prerequisite"}],
    }
    reply.update(changes)
    return reply


def test_breakdown_from_the_model_gets_its_execution_order_computed() -> None:
    generator = PerCallGenerator([breakdown_reply()])
    data = ReasoningService(generator).breakdown(PROBLEM, max_depth=2)
    BreakdownResult.model_validate(data)
    assert data["executionOrder"] == ["p1", "p1-2", "p1-1"]
    assert data["totalSubProblems"] == 3 and data["model"] == "fake-llm"
    # the real server's fields where the seed is silent, made for a model's reply too
    assert data["dependencies"][0]["description"] == "'Index' needs 'Test' first"
    assert [e["from"] for e in data["graph"]["edges"]] == ["p1-2"]
    assert [n["label"] for n in data["graph"]["nodes"]] == ["Ship it", "Index", "Test"]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        (
            {
                "dependencies": [
                    {"from": "p1-1", "to": "p1-2", "type": "s"},
                    {"from": "p1-2", "to": "p1-1", "type": "s"},
                ]
            },
            "cycle",
        ),
        ({"dependencies": [{"from": "p9", "to": "p1", "type": "s"}]}, "not a sub-problem"),
    ],
)
def test_an_inconsistent_breakdown_is_repaired(changes: dict[str, Any], error: str) -> None:
    generator = PerCallGenerator([breakdown_reply(**changes), breakdown_reply()])
    data = ReasoningService(generator).breakdown(PROBLEM, max_depth=2)
    assert error in generator.prompts[1] and data["totalSubProblems"] == 3


def test_a_breakdown_deeper_than_max_depth_is_refused() -> None:
    generator = PerCallGenerator([breakdown_reply()])
    with pytest.raises(ReasoningFailed, match="deeper than maxDepth 1"):
        ReasoningService(generator).breakdown(PROBLEM, max_depth=1)


def test_memories_reach_the_model_as_passages() -> None:
    memories = FakeMemories([RelevantMemory("m7", "Exports run at 02:00", "episodic", 0.8)])
    generator = PerCallGenerator([THINK])
    data = ReasoningService(generator, memories).think(PROBLEM, "analytical", user_id="u1")
    assert "Relevant memory: Exports run at 02:00" in [p.text for p in generator.passages[0]]
    assert data["memoriesUsed"][0]["id"] == "m7"


def test_a_stream_that_fails_is_reported_and_the_rest_merged() -> None:
    def reply(prompt: str) -> Any:
        if "the creative stream" in prompt:
            return GenerationError("rate_limited", "slow down")
        return {**THINK, "recommendations": ["Add the index"], "risks": []}

    data = ReasoningService(PerCallGenerator(reply)).ponder(PROBLEM, timeout_ms=5000)
    status = {s["name"]: (s["status"], s.get("error", "")) for s in data["streams"]}
    assert status["creative"][0] == "failed" and "rate_limited" in status["creative"][1]
    assert [s for s, (st, _) in status.items() if st == "completed"] == [
        "analytical",
        "critical",
        "synthetic",
    ]
