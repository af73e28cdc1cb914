from __future__ import annotations

from cairn.services.thoughtmcp.metacognition import MetacognitionService


def by_type(data: dict) -> dict[str, dict]:
    return {b["type"]: b for b in data["biases"]}


def test_sunk_cost_quotes_the_text(offline_service: MetacognitionService) -> None:
    data, meta = offline_service.detect_bias("The market changed. We already spent $2M so we can't stop now.")
    found = by_type(data)
    assert set(found) == {"sunk_cost"}
    bias = found["sunk_cost"]
    assert bias["evidence"] == ["already spent $2M so we can't stop now"]
    assert bias["location"] == {
        "stepIndex": 1,
        "reasoning": "We already spent $2M so we can't stop now.",
        "context": "The market changed.",  # no context given: the sentences around it
    }
    assert 0 < bias["severity"] <= 1 and 0 < bias["confidence"] <= 1
    assert isinstance(bias["correction"], str) and bias["correction"].endswith(".")
    assert "already spent" in bias["correction"]  # the sunk-cost correction, not a generic one
    assert set(bias["correctionDetails"]) == {"techniques", "challengeQuestions"}
    assert all(isinstance(t, str) for t in bias["correctionDetails"]["techniques"])
    assert bias["correctionDetails"]["techniques"] and bias["correctionDetails"]["challengeQuestions"]
    assert isinstance(bias["evidence"], list) and all(isinstance(e, str) for e in bias["evidence"])
    assert bias["detectedAt"] == "2026-01-02T03:04:05.000Z"
    assert data["monitoringActive"] is False
    assert 0 <= data["detectionTime"] < 1  # seconds
    assert data["method"] == "rule-based" and data["model"] is None
    assert meta["componentsUsed"] == ["biasDetector", "biasCorrector"]


def test_each_bias_type_has_a_rule_that_finds_it(offline_service: MetacognitionService) -> None:
    cases = {
        "confirmation": "All the data I've seen supports my hypothesis that users prefer feature A.",
        "anchoring": "The initial estimate was $500k, so we should stick close to the initial estimate.",
        "availability": "I recently heard about a startup that failed after migrating. "
        "A friend told me it was a nightmare, so it must be risky.",
        "recency": "The latest numbers from last week are great. This trend will continue going forward.",
        "representativeness": "Two customers complained, so all customers hate the new UI. "
        "It is typical of them.",
        "framing": "The surgery has a 10% chance of death. You will lose everything if you wait.",
        "attribution": "He missed the deadline because he is lazy. That is just who he is.",
    }
    for expected, text in cases.items():
        data, _ = offline_service.detect_bias(text)
        found = by_type(data)
        assert expected in found, text
        for quote in found[expected]["evidence"]:
            assert quote in text
        assert isinstance(found[expected]["correction"], str)


def test_careful_reasoning_has_no_bias(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.detect_bias(
        "We measured p99 latency over 30 days and it dropped 12% after the change. However, the sample "
        "excludes weekends, so we will rerun the test before deciding."
    )
    assert data["biases"] == []


def test_a_lone_weak_cue_is_not_enough(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.detect_bias("The latest release is out.")
    assert data["biases"] == []


def test_a_situational_explanation_weakens_character_blame(offline_service: MetacognitionService) -> None:
    blame, _ = offline_service.detect_bias("She is careless. Her attitude is the problem.")
    excused, _ = offline_service.detect_bias(
        "She is careless. Her attitude is the problem, but it was due to the workload this month."
    )
    assert "attribution" in by_type(blame)
    assert "attribution" not in by_type(excused)


def test_deterministic(offline_service: MetacognitionService) -> None:
    text = "All the evidence confirms my view. We already invested a year, and we cannot quit now."
    first, _ = offline_service.detect_bias(text)
    second, _ = offline_service.detect_bias(text)
    first.pop("detectionTime"), second.pop("detectionTime")
    assert first == second
