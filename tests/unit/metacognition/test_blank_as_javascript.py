"""ThoughtMCP (a TypeScript server) reads a text as empty when JavaScript's `trim()` leaves
nothing: a byte-order mark alone is empty, an information separator (U+001C) or NEL (U+0085) is
text. Python's `str.strip()` reads each the other way round, so each input is tried both ways:
blank reasoning or text is answered by the rules without asking a model, blank evidence is no
evidence, a blank context is no context."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from cairn.ports.generator import GenerationError
from cairn.services.thoughtmcp.metacognition import (
    MetacognitionFailed,
    MetacognitionService,
    bias,
    model_path,
)

from .conftest import FixedClock, ReplyGenerator
from .test_model_path import CONFIDENCE, SECRET

TEXTS = [("\ufeff", True), ("\t\ufeff\u3000", True), ("\x1c", False), ("\x85", False)]
"""(text, whether JavaScript's trim() leaves it empty): Python's strip() says the opposite of each."""


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_assess_confidence_of_blank_reasoning(
    offline_service: MetacognitionService, text: str, blank: bool
) -> None:
    data, meta = offline_service.assess_confidence(text)
    assert (meta["componentsUsed"] == ["validation"]) == blank
    assert (data["overallConfidence"] == 0) == blank


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_detect_emotion_of_blank_text(offline_service: MetacognitionService, text: str, blank: bool) -> None:
    data, _ = offline_service.detect_emotion(text)
    assert (data["circumplex"]["confidence"] == 0) == blank


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_blank_evidence_is_no_evidence(offline_service: MetacognitionService, text: str, blank: bool) -> None:
    _, meta = offline_service.assess_confidence("We should rewrite it in Rust.", evidence=[text])
    assert meta["evidenceSource"] == ("none" if blank else "provided")


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_the_model_is_shown_no_blank_evidence(text: str, blank: bool) -> None:
    generator = ReplyGenerator(f"```json\n{json.dumps(CONFIDENCE)}\n```")
    svc = MetacognitionService(generator, clock=FixedClock())
    svc.assess_confidence(SECRET, evidence=["Finance report Q3: $2M spent", text])
    (evidence,) = [p.text for p in generator.passages[0] if p.chunk_id == "evidence"]
    assert (f"- {text}" in evidence.split("\n")) != blank


TOOLS: dict[str, Callable[[MetacognitionService, str], Any]] = {
    "assess_confidence": lambda svc, text: svc.assess_confidence(text),
    "detect_bias": lambda svc, text: svc.detect_bias(text),
    "detect_emotion": lambda svc, text: svc.detect_emotion(text),
    "evaluate": lambda svc, text: svc.evaluate(text),
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_blank_reasoning_never_asks_the_model(tool: str, text: str, blank: bool) -> None:
    generator = ReplyGenerator(GenerationError("generation_failed", "the model is down"))
    svc = MetacognitionService(generator, clock=FixedClock())
    try:
        data, _ = TOOLS[tool](svc, text)
        asked = False
        assert data["method"] == "rule-based"
    except MetacognitionFailed:
        asked = True
    assert asked != blank
    assert bool(generator.questions) != blank


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_a_blank_context_is_no_passage_and_no_bias_location(text: str, blank: bool) -> None:
    assert (model_path.passages(context=text) == []) == blank
    around = bias.location(["We spent $2M.", "So we go on."], 0, text).context
    assert around == ("So we go on." if blank else text)
