from __future__ import annotations

import pytest

from cairn.services.thoughtmcp.metacognition import MetacognitionService

HEDGED = "Maybe the cache might help, but it is unclear. Possibly traffic grows, I guess, but I'm not sure."
ASSERTIVE = (
    "We measured p99 latency over 30 days and it dropped 35% after the cache change, according to the "
    "dashboard report. Therefore we should keep the cache. However, one risk is stale reads; the "
    "alternative is a shorter TTL."
)


DIMENSIONS = {"evidenceQuality", "reasoningCoherence", "completeness", "uncertaintyLevel", "biasFreedom"}
SUNK = "We already spent $2M on the rewrite, so we can't stop now. Therefore we should finish it."


def test_the_answer_has_the_tool_shape(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.assess_confidence(ASSERTIVE)
    assert isinstance(data["overallConfidence"], float)
    assert set(data["dimensions"]) == DIMENSIONS
    assert all(isinstance(v, float) and 0 <= v <= 1 for v in data["dimensions"].values())
    assert isinstance(data["interpretation"], str)
    assert isinstance(data["warnings"], list) and all(isinstance(w, str) for w in data["warnings"])
    assert data["recommendations"] and all(isinstance(r, str) for r in data["recommendations"])
    assert not DIMENSIONS & set(data)  # the scores live under `dimensions` only
    assert data["method"] == "rule-based" and data["model"] is None


def test_hedged_reasoning_is_more_uncertain_and_less_confident(offline_service: MetacognitionService) -> None:
    hedged, _ = offline_service.assess_confidence(HEDGED)
    firm, meta = offline_service.assess_confidence(ASSERTIVE)
    assert hedged["dimensions"]["uncertaintyLevel"] > firm["dimensions"]["uncertaintyLevel"] + 0.3
    assert hedged["overallConfidence"] < firm["overallConfidence"]
    assert firm["dimensions"]["completeness"] == 1.0  # alternative, risk, conclusion and evidence
    assert meta["evidenceSource"] == "extracted"
    assert firm["extractedEvidence"] == [
        {
            "statement": "We measured p99 latency over 30 days and it dropped 35% after the cache change, "
            "according to the dashboard report.",
            "type": "statistical",  # it has numbers
            "confidence": 1.0,  # a number, a named source and six words or more
        }
    ]


def test_overall_is_the_weighted_sum_of_the_factors(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.assess_confidence(ASSERTIVE)
    d = data["dimensions"]
    factors = {f["dimension"]: f for f in data["factors"]}
    assert {d: f["weight"] for d, f in factors.items()} == {
        "evidence": 0.3,
        "coherence": 0.3,
        "completeness": 0.25,
        "uncertainty": 0.15,
    }
    expected = (
        0.3 * d["evidenceQuality"]
        + 0.3 * d["reasoningCoherence"]
        + 0.25 * d["completeness"]
        + 0.15 * (1 - d["uncertaintyLevel"])
    )
    assert data["overallConfidence"] == pytest.approx(expected, abs=0.002)
    assert factors["uncertainty"]["score"] == pytest.approx(1 - d["uncertaintyLevel"])


def test_bias_freedom_comes_from_the_bias_detector(offline_service: MetacognitionService) -> None:
    clean, _ = offline_service.assess_confidence(ASSERTIVE)
    biased, _ = offline_service.assess_confidence(SUNK)
    detected, _ = offline_service.detect_bias(SUNK)
    [sunk] = detected["biases"]
    assert clean["dimensions"]["biasFreedom"] == 1.0
    assert biased["dimensions"]["biasFreedom"] == pytest.approx(
        1 - sunk["severity"] * sunk["confidence"], abs=0.001
    )
    assert biased["dimensions"]["biasFreedom"] < 0.6
    assert f'Possible sunk cost bias: "{sunk["evidence"][0]}".' in biased["warnings"]
    assert sunk["correction"] in biased["recommendations"]


@pytest.mark.parametrize(
    ("reasoning", "band", "weakest"),
    [
        (ASSERTIVE, "High confidence - ", "evidence quality"),
        ("We should rewrite it in Rust.", "Moderate confidence - ", "evidence quality (0.10)"),
        (HEDGED, "Low confidence - ", "evidence quality (0.10)"),
    ],
)
def test_interpretation_by_band_names_the_weakest_dimension(
    offline_service: MetacognitionService, reasoning: str, band: str, weakest: str
) -> None:
    data, _ = offline_service.assess_confidence(reasoning)
    assert data["interpretation"].startswith(band)
    assert f"weakest dimension is {weakest}" in data["interpretation"]


def test_a_bias_can_be_the_weakest_dimension(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.assess_confidence(
        SUNK, evidence=["Finance report Q3 2025: $2M spent of a $2.5M budget", "Burn-down chart (2025-11)"]
    )
    assert data["interpretation"].endswith(f"bias freedom ({data['dimensions']['biasFreedom']:.2f}).")


def test_warnings_quote_the_hedges_and_say_evidence_is_missing(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.assess_confidence(HEDGED)
    assert 'Hedged claims: "maybe", "might", "unclear", "possibly".' in data["warnings"]
    assert "No evidence was given and none was found in the reasoning." in data["warnings"]
    assert any("maybe" in r and "instead of hedging" in r for r in data["recommendations"])
    assert "Add the data, measurements or sources the conclusion rests on." in data["recommendations"]


def test_recommendations_follow_the_weak_dimensions(offline_service: MetacognitionService) -> None:
    firm, _ = offline_service.assess_confidence(ASSERTIVE)
    bare, _ = offline_service.assess_confidence("We should rewrite it in Rust.")
    assert not any("alternative" in r for r in firm["recommendations"])  # it compares one already
    assert any("alternative" in r for r in bare["recommendations"])
    assert any("assumptions, risks or limitations" in r for r in bare["recommendations"])
    assert not any("hedging" in r for r in bare["recommendations"])


def test_provided_specific_evidence_scores_higher_than_vague(offline_service: MetacognitionService) -> None:
    reasoning = "Based on benchmark results, the optimization will improve throughput by 40%"
    specific, meta = offline_service.assess_confidence(
        reasoning,
        evidence=["Benchmark report: 40% higher throughput over 12 runs", "Load test data (2025-11)"],
    )
    vague, _ = offline_service.assess_confidence(reasoning, evidence=["it feels faster"])
    assert meta["evidenceSource"] == "provided"
    assert "extractedEvidence" not in specific
    assert specific["dimensions"]["evidenceQuality"] > vague["dimensions"]["evidenceQuality"] + 0.2
    assert any(w.startswith("The evidence given is vague") for w in vague["warnings"])
    assert not any(w.startswith("The evidence given is vague") for w in specific["warnings"])


def test_chance_words_make_the_uncertainty_aleatoric(offline_service: MetacognitionService) -> None:
    chance = "Results vary randomly; the variance is high and it is down to chance."
    data, _ = offline_service.assess_confidence(chance)
    hedged, _ = offline_service.assess_confidence(HEDGED)
    assert data["uncertaintyType"] == "aleatoric"
    assert hedged["uncertaintyType"] == "epistemic"


def test_a_contradiction_lowers_coherence(offline_service: MetacognitionService) -> None:
    consistent, _ = offline_service.assess_confidence("The system will scale. The database will scale too.")
    contradictory, _ = offline_service.assess_confidence("The system will scale. The system will not scale.")
    assert contradictory["dimensions"]["reasoningCoherence"] < consistent["dimensions"]["reasoningCoherence"]
    assert "contradictions" in contradictory["factors"][1]["explanation"]
    assert any(w.startswith("The reasoning contradicts itself") for w in contradictory["warnings"])
    assert any(r.startswith("Resolve the contradiction") for r in contradictory["recommendations"])
    assert not any("contradicts" in w for w in consistent["warnings"])


def test_no_evidence_at_all(offline_service: MetacognitionService) -> None:
    data, meta = offline_service.assess_confidence("We should rewrite it in Rust.")
    assert meta["evidenceSource"] == "none"
    assert data["dimensions"]["evidenceQuality"] == 0.1


@pytest.mark.parametrize("reasoning", ["", "   \n\t"])
def test_empty_reasoning_special_answer(offline_service: MetacognitionService, reasoning: str) -> None:
    data, meta = offline_service.assess_confidence(reasoning)
    assert data["overallConfidence"] == 0
    assert data["dimensions"] == {
        "evidenceQuality": 0.0,
        "reasoningCoherence": 0.0,
        "completeness": 0.0,
        "uncertaintyLevel": 1.0,
        "biasFreedom": 0.0,
    }
    assert data["uncertaintyType"] == "epistemic"
    assert len(data["factors"]) == 4 and all(f["score"] == 0 for f in data["factors"])
    assert data["interpretation"].startswith("Low confidence - ")
    assert data["warnings"] and data["recommendations"]
    assert meta["componentsUsed"] == ["validation"] and meta["evidenceSource"] == "none"


def test_deterministic(offline_service: MetacognitionService) -> None:
    first, _ = offline_service.assess_confidence(ASSERTIVE)
    second, _ = offline_service.assess_confidence(ASSERTIVE)
    first.pop("processingTime"), second.pop("processingTime")
    assert first == second
