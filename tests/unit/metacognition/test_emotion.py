from __future__ import annotations

import pytest

from cairn.services.thoughtmcp.metacognition import MetacognitionService

INTENSITIES = {"high", "moderate", "low"}


def emotions(data: dict) -> dict[str, dict]:
    return {e["emotion"]: e for e in data["discrete"]["emotions"]}


def test_thrilled_and_grateful_is_joy_gratitude_positive_aroused(
    offline_service: MetacognitionService,
) -> None:
    data, meta = offline_service.detect_emotion("I'm thrilled and grateful!")
    calm, _ = offline_service.detect_emotion("The report is on the shared drive.")
    found = emotions(data)
    assert set(found) == {"joy", "gratitude"}
    assert found["joy"]["evidence"] == ["thrilled"]
    assert found["gratitude"]["evidence"] == ["grateful"]
    assert all(0 < e["score"] <= 1 and 0 < e["confidence"] <= 1 for e in found.values())
    assert all(e["intensity"] in INTENSITIES for e in found.values())
    assert data["circumplex"]["valence"] > 0.5
    assert data["circumplex"]["arousal"] > calm["circumplex"]["arousal"] + 0.2
    assert data["method"] == "rule-based" and data["model"] is None
    assert meta["componentsUsed"] == ["emotionAnalyzer", "discreteEmotionClassifier"]
    assert meta["timestamp"] == "2026-01-02T03:04:05.000Z"


def test_negation_turns_valence_and_drops_the_emotion(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.detect_emotion("not happy")
    assert data["circumplex"]["valence"] < 0
    assert "joy" not in emotions(data)


def test_discrete_emotions_each_from_their_words(offline_service: MetacognitionService) -> None:
    cases = {
        "I am so ashamed of what happened.": "shame",
        "I feel guilty, it was my fault.": "guilt",
        "I'm terrified and anxious about the launch.": "fear",
        "This is disgusting and revolting.": "disgust",
        "I'm furious and annoyed with the vendor.": "anger",
        "We are proud of what the team achieved.": "pride",
        "The view was breathtaking and majestic.": "awe",
        "I was surprised, it was completely unexpected.": "surprise",
        "I'm heartbroken and lonely.": "sadness",
    }
    for text, expected in cases.items():
        data, _ = offline_service.detect_emotion(text)
        assert data["discrete"]["primary"] == expected, text
        assert data["discrete"]["emotions"][0]["emotion"] == expected, text


def test_discrete_has_the_tool_shape(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.detect_emotion(
        "I'm really excited about this new project! It's going to be amazing!"
    )
    discrete = data["discrete"]
    assert set(discrete) == {"primary", "emotions", "confidence"}
    assert isinstance(discrete["primary"], str) and discrete["primary"] == "joy"
    assert isinstance(discrete["confidence"], float) and 0 < discrete["confidence"] <= 1
    for e in discrete["emotions"]:
        assert isinstance(e["emotion"], str) and isinstance(e["score"], float) and 0 <= e["score"] <= 1
        assert e["intensity"] in INTENSITIES
    scores = [e["score"] for e in discrete["emotions"]]
    assert scores == sorted(scores, reverse=True)
    assert discrete["primary"] == discrete["emotions"][0]["emotion"]


@pytest.mark.parametrize(
    ("text", "intensity"),
    [
        ("I was a bit worried.", "moderate"),  # one plain cue word
        ("I'm SO HAPPY!!!", "high"),  # an intensifier, capitals and exclamation marks
        ("The view was majestic.", "low"),  # a word VADER does not rate, unstressed
    ],
)
def test_intensity_is_the_band_of_the_score(
    offline_service: MetacognitionService, text: str, intensity: str
) -> None:
    data, _ = offline_service.detect_emotion(text)
    top = data["discrete"]["emotions"][0]
    assert top["intensity"] == intensity, top
    band = "high" if top["score"] >= 0.66 else "moderate" if top["score"] >= 0.33 else "low"
    assert band == intensity


def test_a_close_runner_up_lowers_the_confidence_of_the_primary(
    offline_service: MetacognitionService,
) -> None:
    clear, _ = offline_service.detect_emotion("I'm heartbroken and lonely.")
    close, _ = offline_service.detect_emotion("I'm thrilled and grateful!")
    assert clear["discrete"]["confidence"] == clear["discrete"]["emotions"][0]["confidence"]
    first, second = close["discrete"]["emotions"][:2]
    assert first["score"] - second["score"] < 0.1
    assert close["discrete"]["confidence"] == pytest.approx(0.8 * first["confidence"], abs=0.001)


def test_dominance_follows_control_against_helplessness(offline_service: MetacognitionService) -> None:
    control, _ = offline_service.detect_emotion("We decided to take control and I will lead the migration.")
    helpless, _ = offline_service.detect_emotion("I feel trapped and helpless, I have no choice.")
    assert control["circumplex"]["dominance"] > 0.3
    assert helpless["circumplex"]["dominance"] < -0.3


def test_exclamations_and_capitals_raise_arousal(offline_service: MetacognitionService) -> None:
    plain, _ = offline_service.detect_emotion("this is good")
    loud, _ = offline_service.detect_emotion("this is GOOD!!!")
    assert loud["circumplex"]["arousal"] > plain["circumplex"]["arousal"] + 0.2


def test_include_discrete_false_gives_null(offline_service: MetacognitionService) -> None:
    data, meta = offline_service.detect_emotion("I'm thrilled!", include_discrete=False)
    assert data["discrete"] is None
    assert meta["componentsUsed"] == ["emotionAnalyzer"]
    assert isinstance(data["detectionTime"], float)


def test_empty_text_is_neutral_with_no_confidence(offline_service: MetacognitionService) -> None:
    data, _ = offline_service.detect_emotion("   ")
    assert data["circumplex"]["valence"] == 0 and data["circumplex"]["confidence"] == 0
    assert data["discrete"] == {"primary": None, "emotions": [], "confidence": 0.0}


def test_deterministic(offline_service: MetacognitionService) -> None:
    text = "Honestly I'm worried, but also excited and grateful for the chance!"
    first, _ = offline_service.detect_emotion(text)
    second, _ = offline_service.detect_emotion(text)
    first.pop("detectionTime"), second.pop("detectionTime")
    assert first == second
