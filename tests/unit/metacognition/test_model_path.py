from __future__ import annotations

import json
from typing import Any

import pytest

from cairn.ports.generator import GenerationError
from cairn.services.thoughtmcp.metacognition import MetacognitionFailed, MetacognitionService

from .conftest import FixedClock, ReplyGenerator

SECRET = "Project Nightingale already spent $2M so we can't stop now."

CONFIDENCE: dict[str, Any] = {
    "dimensions": {
        "evidenceQuality": 0.4,
        "reasoningCoherence": 0.6,
        "completeness": 0.5,
        "uncertaintyLevel": 0.2,
        "biasFreedom": 0.3,
    },
    "uncertaintyType": "epistemic",
    "warnings": ["past spend is the only reason given"],
    "recommendations": ["estimate the remaining cost and value"],
    "explanations": {"evidence": "e", "coherence": "c", "completeness": "m", "uncertainty": "u"},
}
BIASES: dict[str, Any] = {
    "biases": [
        {
            "type": "sunk_cost",
            "severity": 0.8,
            "evidence": ["already spent $2M"],
            "correction": "Judge the project by its future value.",
            "confidence": 0.9,
            "sentenceIndex": 0,
            "explanation": "past spend drives the decision",
            "correctionDetails": {
                "techniques": ["zero-based review"],
                "challengeQuestions": ["Would we start it today?"],
            },
        }
    ]
}
EMOTION: dict[str, Any] = {
    "circumplex": {"valence": 0.7, "arousal": 0.6, "dominance": 0.2, "confidence": 0.8},
    "discrete": {
        "primary": "joy",
        "emotions": [
            {
                "emotion": "joy",
                "score": 0.9,
                "intensity": "high",
                "confidence": 0.8,
                "evidence": ["thrilled"],
            },
            {"emotion": "surprise", "score": 0.4, "intensity": "moderate", "confidence": 0.5, "evidence": []},
        ],
        "confidence": 0.75,
    },
}
EVALUATION = {
    "quality": {"coherence": 0.7, "completeness": 0.4, "logicalValidity": 0.5, "evidenceSupport": 0.3},
    "strengths": ["states the spend"],
    "weaknesses": ["relies on sunk cost"],
    "recommendations": ["assess future value"],
}


def service(*replies: str | BaseException) -> tuple[MetacognitionService, ReplyGenerator]:
    generator = ReplyGenerator(*replies)
    return MetacognitionService(generator, clock=FixedClock()), generator


def test_assess_confidence_by_the_model() -> None:
    svc, generator = service(f"Here you go:\n```json\n{json.dumps(CONFIDENCE)}\n```")
    data, meta = svc.assess_confidence(SECRET, evidence=["Finance report Q3: $2M spent"])
    assert data["method"] == "language-model" and data["model"] == "test-model"
    assert data["dimensions"] == CONFIDENCE["dimensions"] and data["uncertaintyType"] == "epistemic"
    expected = 0.3 * 0.4 + 0.3 * 0.6 + 0.25 * 0.5 + 0.15 * 0.8  # computed by the service
    assert data["overallConfidence"] == pytest.approx(expected, abs=0.001)
    # the band follows the computed total and names the model's weakest score
    assert data["interpretation"] == (
        "Moderate confidence - the reasoning is partly supported; "
        "its weakest dimension is bias freedom (0.30)."
    )
    assert data["warnings"] == CONFIDENCE["warnings"]
    assert data["recommendations"] == CONFIDENCE["recommendations"]
    assert [f["explanation"] for f in data["factors"]] == ["e", "c", "m", "u"]
    assert meta["evidenceSource"] == "provided"
    assert len(generator.questions) == 1
    assert '"dimensions"' in generator.questions[0] and '"biasFreedom"' in generator.questions[0]
    assert any("Finance report" in p.text for p in generator.passages[0])


def test_a_flat_confidence_reply_is_sent_for_repair() -> None:
    flat = {**CONFIDENCE["dimensions"], **{k: v for k, v in CONFIDENCE.items() if k != "dimensions"}}
    svc, generator = service(json.dumps(flat), json.dumps(CONFIDENCE))
    data, _ = svc.assess_confidence(SECRET)
    assert data["dimensions"]["biasFreedom"] == 0.3
    assert "dimensions: Field required" in generator.questions[1]


def test_detect_bias_by_the_model_locates_the_sentence() -> None:
    svc, generator = service(json.dumps(BIASES))
    data, _ = svc.detect_bias(SECRET)
    assert data["method"] == "language-model" and data["model"] == "test-model"
    [bias] = data["biases"]
    assert bias["location"] == {
        "stepIndex": 0,
        "reasoning": SECRET,
        "context": "",
    }  # one sentence, no context
    assert bias["correction"] == "Judge the project by its future value."
    assert bias["correctionDetails"] == BIASES["biases"][0]["correctionDetails"]
    assert generator.passages[0][0].text.startswith("[0] ")


def test_detect_emotion_by_the_model() -> None:
    svc, generator = service(json.dumps(EMOTION))
    data, _ = svc.detect_emotion("I'm thrilled about it")
    assert data["circumplex"]["valence"] == 0.7
    assert data["discrete"] == EMOTION["discrete"]
    assert isinstance(data["discrete"]["primary"], str)
    assert data["method"] == "language-model"
    assert '"primary"' in generator.questions[0] and '"intensity"' in generator.questions[0]
    svc, _ = service(json.dumps(EMOTION))
    data, _ = svc.detect_emotion("I'm thrilled about it", include_discrete=False)
    assert data["discrete"] is None


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"intensity": "low"}, "discrete.emotions[0].intensity must be 'high' for score 0.9"),
        ({"score": 0.3}, "discrete.primary must be the emotion with the highest score"),
        (
            {"intensity": "strong"},
            "discrete.emotions.0.intensity: Input should be 'high', 'moderate' or 'low'",
        ),
    ],
)
def test_an_inconsistent_emotion_reply_is_sent_for_repair(change: dict, problem: str) -> None:
    wrong = json.loads(json.dumps(EMOTION))
    wrong["discrete"]["emotions"][0].update(change)
    svc, generator = service(json.dumps(wrong), json.dumps(EMOTION))
    data, _ = svc.detect_emotion("I'm thrilled about it")
    assert data["discrete"]["primary"] == "joy"
    assert problem in generator.questions[1]


def test_evaluate_by_the_model_with_its_blocks() -> None:
    svc, generator = service(json.dumps(EVALUATION), json.dumps(CONFIDENCE), json.dumps(BIASES))
    data, meta = svc.evaluate(SECRET)
    assert meta["componentsUsed"] == [
        "qualityAnalyzer",
        "confidenceAssessor",
        "biasDetector",
        "biasCorrector",
    ]
    assert data["quality"]["logicalValidity"] == 0.5 and data["strengths"] == ["states the spend"]
    assert data["method"] == "language-model" and data["model"] == "test-model"
    assert data["confidence"]["method"] == "language-model"
    assert data["confidence"]["dimensions"]["biasFreedom"] == 0.3
    assert isinstance(data["biases"][0]["correction"], str)
    assert data["biases"][0]["type"] == "sunk_cost"
    assert len(generator.questions) == 3


def test_a_malformed_reply_is_repaired_once() -> None:
    bad = '{"dimensions": {"evidenceQuality": 1.7, "reasoningCoherence": 0.6}}'
    svc, generator = service(bad, json.dumps(CONFIDENCE))
    data, _ = svc.assess_confidence(SECRET)
    assert data["method"] == "language-model" and data["dimensions"]["evidenceQuality"] == 0.4
    assert len(generator.questions) == 2
    repair = generator.questions[1]
    assert "dimensions.evidenceQuality" in repair and "less than or equal to 1" in repair
    assert bad in repair  # the bad reply is sent back


def test_a_quote_not_in_the_text_is_sent_for_repair() -> None:
    invented = json.loads(json.dumps(BIASES))
    invented["biases"][0]["evidence"] = ["we must finish what we started"]
    svc, generator = service(json.dumps(invented), json.dumps(BIASES))
    data, _ = svc.detect_bias(SECRET)
    assert data["biases"][0]["evidence"] == ["already spent $2M"]
    assert "biases[0].evidence[0] is not an exact quote" in generator.questions[1]


def test_malformed_twice_is_reasoning_failed_without_quoting_the_input() -> None:
    echo = f'I cannot answer about "{SECRET}"'
    svc, generator = service(echo, '{"biases": [{"type": "sunk_cost"}]}')
    with pytest.raises(MetacognitionFailed) as caught:
        svc.detect_bias(SECRET)
    assert caught.value.code == "reasoning_failed"
    assert "detect_bias" in caught.value.message and "after one repair" in caught.value.message
    assert "Nightingale" not in caught.value.message and "$2M" not in caught.value.message
    assert len(generator.questions) == 2


def test_an_out_of_range_sentence_index_fails_after_repair() -> None:
    wrong = json.loads(json.dumps(BIASES))
    wrong["biases"][0]["sentenceIndex"] = 4
    svc, _ = service(json.dumps(wrong), json.dumps(wrong))
    with pytest.raises(MetacognitionFailed, match="sentenceIndex is past the last sentence"):
        svc.detect_bias(SECRET)


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (GenerationError("generation_failed", f"upstream: {SECRET}"), "GenerationError generation_failed"),
        (TimeoutError(), "no reply in time"),
    ],
)
def test_a_failing_model_is_reasoning_failed(failure: BaseException, reason: str) -> None:
    svc, _ = service(failure)
    with pytest.raises(MetacognitionFailed) as caught:
        svc.detect_emotion(SECRET)
    assert caught.value.code == "reasoning_failed"
    assert reason in caught.value.message and "detect_emotion" in caught.value.message
    assert "Nightingale" not in caught.value.message


def test_empty_reasoning_never_asks_the_model() -> None:
    svc, generator = service()
    data, meta = svc.assess_confidence("  ")
    assert data["method"] == "rule-based" and data["model"] is None
    assert meta["evidenceSource"] == "none"
    bias, _ = svc.detect_bias("")
    assert bias["biases"] == [] and bias["model"] is None
    assert generator.questions == []
