"""The metacognition tools through the configured language model.

The Generator is asked for one JSON object of the tool's reply shape (the reply models below),
with the text to read as passages. The reply is validated with pydantic plus the checks a model
can fail that a schema cannot express (a quoted piece of evidence must occur in the text, a
sentence index must exist, an emotion's intensity must be the band of its score, the primary
emotion must score highest). An invalid reply gets ONE repair attempt: the validation errors and
the bad reply are sent back with the same instructions. A reply still invalid, or a model that
fails or times out, raises MetacognitionFailed (code "reasoning_failed") naming the tool and what
was wrong, never quoting the user's text or the model's reply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cairn.domain.errors import CairnError
from cairn.domain.js_text import js_blank
from cairn.ports.generator import GenerationError, Generator, Passage
from cairn.services.memory.model_calls import complete, failure_reason, json_object
from cairn.services.thoughtmcp.metacognition.emotion import intensity_of
from cairn.services.thoughtmcp.metacognition.models import (
    BiasType,
    EmotionName,
    Intensity,
    Quality,
    Signed,
    UncertaintyType,
    Unit,
)

MAX_INPUT_CHARS: Final = 24_000  # what the model is shown of one text
MAX_BAD_REPLY_CHARS: Final = 6_000  # what a repair request quotes of the bad reply
MAX_ERRORS: Final = 5

Reply = TypeVar("Reply", bound=BaseModel)


class MetacognitionFailed(CairnError):
    """A metacognition tool could not get a valid answer from the language model."""

    code = "reasoning_failed"


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ConfidenceExplanations(_Reply):
    evidence: str
    coherence: str
    completeness: str
    uncertainty: str


class DimensionsReply(_Reply):
    evidenceQuality: Unit
    reasoningCoherence: Unit
    completeness: Unit
    uncertaintyLevel: Unit
    biasFreedom: Unit


class ConfidenceReply(_Reply):
    """assess_confidence's data without what the service derives: overallConfidence (the weighted
    sum) and interpretation (its band), so the two always agree with the scores."""

    dimensions: DimensionsReply
    uncertaintyType: UncertaintyType
    warnings: list[str]
    recommendations: list[str] = Field(min_length=1)
    explanations: ConfidenceExplanations


class CorrectionDetailsReply(_Reply):
    techniques: list[str]
    challengeQuestions: list[str]


class BiasFinding(_Reply):
    type: BiasType
    severity: Unit
    evidence: list[str] = Field(min_length=1)
    correction: str = Field(min_length=1)
    confidence: Unit
    sentenceIndex: int = Field(ge=0)
    explanation: str
    correctionDetails: CorrectionDetailsReply


class BiasReply(_Reply):
    biases: list[BiasFinding]


class CircumplexReply(_Reply):
    valence: Signed
    arousal: Unit
    dominance: Signed
    confidence: Unit


class EmotionFinding(_Reply):
    emotion: EmotionName
    score: Unit
    intensity: Intensity
    confidence: Unit
    evidence: list[str]


class DiscreteReply(_Reply):
    primary: EmotionName | None
    emotions: list[EmotionFinding]
    confidence: Unit


class EmotionReply(_Reply):
    circumplex: CircumplexReply
    discrete: DiscreteReply


class EvaluationReply(_Reply):
    quality: Quality
    strengths: list[str]
    weaknesses: list[str]
    recommendations: list[str]


CONFIDENCE_PROMPT: Final = """Assess how much confidence the reasoning in the passages deserves.
Score each dimension from 0 to 1: evidenceQuality (how specific and relevant the evidence is),
reasoningCoherence (whether the steps follow from each other without contradiction), completeness
(alternatives, limitations and a conclusion addressed), uncertaintyLevel (how much remains
uncertain; 1 is fully uncertain), biasFreedom (1 when no cognitive bias shapes the reasoning,
lower the stronger the bias). uncertaintyType is "epistemic" (missing knowledge) or "aleatoric"
(inherent randomness). warnings name specific problems in this reasoning (quote the hedge, the
missing evidence, the bias, the contradiction); recommendations are concrete actions that would
strengthen the weakest dimensions. explanations say in one sentence why each of the first four
dimensions scored as it did. Reply with one JSON object and nothing else:
{"dimensions": {"evidenceQuality": 0.0, "reasoningCoherence": 0.0, "completeness": 0.0,
 "uncertaintyLevel": 0.0, "biasFreedom": 0.0}, "uncertaintyType": "epistemic",
 "warnings": ["..."], "recommendations": ["..."], "explanations": {"evidence": "...",
 "coherence": "...", "completeness": "...", "uncertainty": "..."}}"""

BIAS_PROMPT: Final = """Find cognitive biases in the reasoning passage, whose sentences are numbered
[0], [1], ...
Types: confirmation, anchoring, availability, recency, representativeness, framing, sunk_cost,
attribution. Report only biases the text shows; evidence holds exact quotes copied from the
reasoning; sentenceIndex is the number of the sentence that shows the bias most; correction is
one sentence saying what to do about the bias; correctionDetails lists debiasing techniques and
challenge questions. Reply with one JSON object and nothing else ({"biases": []} when there are
none):
{"biases": [{"type": "sunk_cost", "severity": 0.0, "evidence": ["exact quote"],
 "correction": "...", "confidence": 0.0, "sentenceIndex": 0, "explanation": "...",
 "correctionDetails": {"techniques": ["..."], "challengeQuestions": ["..."]}}]}"""

EMOTION_PROMPT: Final = """Read the emotions the text passage expresses. In circumplex, valence runs
from -1 (negative) to 1 (positive), arousal from 0 (calm) to 1 (activated), dominance from -1
(helpless) to 1 (in control); confidence is yours, 0 to 1. discrete.emotions lists the emotions
present among joy, sadness, anger, fear, disgust, surprise, pride, shame, guilt, gratitude, awe,
each once, highest score first, with score and confidence 0 to 1, intensity "high" when the score
is 0.66 or more, "moderate" from 0.33, else "low", and the words of the text that express it.
discrete.primary is the emotion with the highest score (null when the list is empty);
discrete.confidence is how sure you are of that choice. Reply with one JSON object and nothing else:
{"circumplex": {"valence": 0.0, "arousal": 0.0, "dominance": 0.0, "confidence": 0.0},
 "discrete": {"primary": "joy", "emotions": [{"emotion": "joy", "score": 0.0, "intensity": "low",
 "confidence": 0.0, "evidence": ["word"]}], "confidence": 0.0}}"""

EVALUATION_PROMPT: Final = """Evaluate the quality of the reasoning in the passages. Score from 0 to 1:
coherence, completeness, logicalValidity (whether the conclusion follows from the premises) and
evidenceSupport. List its specific strengths and weaknesses, each naming what in the reasoning it
rests on, and concrete recommendations. Reply with one JSON object and nothing else:
{"quality": {"coherence": 0.0, "completeness": 0.0, "logicalValidity": 0.0, "evidenceSupport": 0.0},
 "strengths": ["..."], "weaknesses": ["..."], "recommendations": ["..."]}"""

REPAIR_PROMPT: Final = """Your previous reply could not be used. Problems:
{errors}
Your previous reply was:
{reply}
Answer again, following the instructions below exactly, with one corrected JSON object and nothing else.

{instructions}"""


def passages(**texts: str | None) -> list[Passage]:
    """One passage per non-empty text, named by its keyword (reasoning, context, evidence, text)."""
    return [
        Passage(chunk_id=name, document_id=name, text=text[:MAX_INPUT_CHARS])
        for name, text in texts.items()
        if text and not js_blank(text)
    ]


def _problems(
    reply: str, shape: type[Reply], check: Callable[[Reply], list[str]] | None
) -> tuple[Reply | None, list[str]]:
    obj = json_object(reply)
    if obj is None:
        return None, ["the reply holds no JSON object"]
    try:
        parsed = shape.model_validate(obj)
    except ValidationError as exc:
        return None, [
            f"{'.'.join(str(p) for p in e['loc']) or 'the object'}: {e['msg']}"
            for e in exc.errors(include_input=False)
        ][:MAX_ERRORS]
    problems = check(parsed) if check else []
    return (None, problems[:MAX_ERRORS]) if problems else (parsed, [])


def ask(
    generator: Generator,
    tool: str,
    instructions: str,
    context: Sequence[Passage],
    shape: type[Reply],
    *,
    check: Callable[[Reply], list[str]] | None = None,
    timeout_s: float | None = None,
) -> Reply:
    """The model's validated reply for `tool` (see the module docstring)."""
    question = instructions
    for attempt in range(2):
        try:
            answer = complete(generator, question, context, timeout_s=timeout_s)
        except (GenerationError, TimeoutError) as exc:
            raise MetacognitionFailed(f"{tool}: the language model failed ({failure_reason(exc)})") from exc
        parsed, problems = _problems(answer.text, shape, check)
        if parsed is not None:
            return parsed
        if attempt == 0:
            question = REPAIR_PROMPT.format(
                errors="\n".join(f"- {p}" for p in problems),
                reply=answer.text[:MAX_BAD_REPLY_CHARS],
                instructions=instructions,
            )
    raise MetacognitionFailed(
        f"{tool}: the language model's reply was still invalid after one repair ({'; '.join(problems)})"
    )


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def quotes_in(text: str, quotes: Sequence[str], what: str) -> list[str]:
    """A problem for each quote that does not occur in `text` (by position, never by content)."""
    haystack = _folded(text)
    return [
        f"{what}[{i}] is not an exact quote of the text"
        for i, quote in enumerate(quotes)
        if not quote.strip() or _folded(quote) not in haystack
    ]


def emotion_problems(text: str, reply: EmotionReply) -> list[str]:
    """What a schema cannot check in the model's emotions: quotes, bands, primary, repeats."""
    found = reply.discrete
    problems: list[str] = []
    for i, e in enumerate(found.emotions):
        problems += quotes_in(text, e.evidence, f"discrete.emotions[{i}].evidence")
        if e.intensity != intensity_of(e.score):
            band = intensity_of(e.score)
            problems.append(f"discrete.emotions[{i}].intensity must be {band!r} for score {e.score}")
    names = [e.emotion for e in found.emotions]
    if len(set(names)) != len(names):
        problems.append("discrete.emotions lists an emotion more than once")
    top = max((e.score for e in found.emotions), default=None)
    if top is None and found.primary is not None:
        problems.append("discrete.primary must be null when discrete.emotions is empty")
    elif top is not None and found.primary not in {e.emotion for e in found.emotions if e.score == top}:
        problems.append("discrete.primary must be the emotion with the highest score")
    return problems
