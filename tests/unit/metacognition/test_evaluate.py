from __future__ import annotations

import time

from cairn.services.thoughtmcp.metacognition import MetacognitionService

STRONG = (
    "We measured p99 latency over 30 days and it dropped 35% after the cache change (dashboard report). "
    "Therefore we should keep the cache. However, one risk is stale reads; the alternative is a shorter TTL."
)
WEAK = (
    "Rewriting everything is always the answer. Everyone knows it, and this clearly proves it. "
    "I knew it all along."
)


def test_quality_and_findings_are_computed_from_the_reasoning(offline_service: MetacognitionService) -> None:
    strong, meta = offline_service.evaluate(STRONG)
    weak, _ = offline_service.evaluate(WEAK)
    for key in ("coherence", "completeness", "logicalValidity", "evidenceSupport"):
        assert 0 <= weak["quality"][key] <= 1
    assert strong["quality"]["logicalValidity"] > weak["quality"]["logicalValidity"]
    assert strong["quality"]["completeness"] > weak["quality"]["completeness"]
    assert any("dropped 35%" in s for s in strong["strengths"])
    assert any("alternative" in s for s in strong["strengths"])
    assert any("confirmation" in w and "clearly proves it" in w for w in weak["weaknesses"])
    assert any("Absolute claims" in w for w in weak["weaknesses"])
    assert weak["recommendations"]
    assert strong["method"] == "rule-based" and strong["model"] is None
    components = ["qualityAnalyzer", "confidenceAssessor", "biasDetector", "biasCorrector"]
    assert meta["componentsUsed"] == components


def test_include_flags(offline_service: MetacognitionService) -> None:
    default, _ = offline_service.evaluate(WEAK)
    assert "confidence" in default and "biases" in default and "emotion" not in default
    confidence = default["confidence"]
    assert isinstance(confidence["overallConfidence"], float)
    assert set(confidence["dimensions"]) == {
        "evidenceQuality",
        "reasoningCoherence",
        "completeness",
        "uncertaintyLevel",
        "biasFreedom",
    }
    [found] = default["biases"]
    assert found["type"] == "confirmation" and isinstance(found["correction"], str)
    # the confidence block sees the same bias the biases block reports
    assert confidence["dimensions"]["biasFreedom"] == round(1 - found["severity"] * found["confidence"], 3)
    assert found["correction"] in confidence["recommendations"]
    assert found["correction"] in default["recommendations"]
    bare, meta = offline_service.evaluate(WEAK, include_confidence=False, include_bias=False)
    assert not {"confidence", "biases", "emotion"} & set(bare)
    assert meta["componentsUsed"] == ["qualityAnalyzer"]
    with_emotion, meta = offline_service.evaluate(
        "I'm thrilled with these results!", include_confidence=False, include_bias=False, include_emotion=True
    )
    assert set(with_emotion["emotion"]) == {"valence", "arousal", "dominance", "confidence", "timestamp"}
    assert with_emotion["emotion"]["valence"] > 0
    assert meta["componentsUsed"] == ["qualityAnalyzer", "emotionAnalyzer"]


def test_deterministic(offline_service: MetacognitionService) -> None:
    first, _ = offline_service.evaluate(STRONG, include_emotion=True)
    second, _ = offline_service.evaluate(STRONG, include_emotion=True)
    first["confidence"].pop("processingTime"), second["confidence"].pop("processingTime")
    assert first == second


def two_kb_text() -> str:
    paragraph = (
        "Honestly I'm worried but excited! We measured p99 latency over 30 days and it dropped 35% after the "
        "cache change, according to the dashboard report. The latest numbers from last week look great, so "
        "this trend will continue. We already spent $2M so we can't stop now. Maybe the vendor is lazy. "
        "Therefore we should keep the cache; however, one risk is stale reads and the alternative is a TTL. "
    )
    text = paragraph * 6
    return text[:2048]


def test_each_tool_answers_a_2kb_text_within_200ms(offline_service: MetacognitionService) -> None:
    text = two_kb_text()
    assert len(text) == 2048
    calls = {
        "assess_confidence": lambda: offline_service.assess_confidence(text),
        "detect_bias": lambda: offline_service.detect_bias(text),
        "detect_emotion": lambda: offline_service.detect_emotion(text),
        "evaluate": lambda: offline_service.evaluate(text, include_emotion=True),
    }
    for name, call in calls.items():
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        assert elapsed < 0.2, f"{name} took {elapsed * 1000:.0f} ms"
