"""The metacognition tools' `data` objects (ThoughtMCP's field names, camelCase on the wire).

Every object a tool returns says how it was made: `method` is "rule-based" (the offline engines of
this package) or "language-model" (the configured Generator, after its JSON validated), and `model`
is the generator's model id or None; a rule-based result never names a model.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.services.thoughtmcp.metacognition.signals import EvidenceType

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Signed = Annotated[float, Field(ge=-1.0, le=1.0)]
Method = Literal["rule-based", "language-model"]
RULE_BASED: Method = "rule-based"
LANGUAGE_MODEL: Method = "language-model"

BiasType = Literal[
    "confirmation",
    "anchoring",
    "availability",
    "recency",
    "representativeness",
    "framing",
    "sunk_cost",
    "attribution",
]
EmotionName = Literal[
    "joy", "sadness", "anger", "fear", "disgust", "surprise", "pride", "shame", "guilt", "gratitude", "awe"
]
UncertaintyType = Literal["epistemic", "aleatoric"]
Intensity = Literal["high", "moderate", "low"]
EvidenceSource = Literal["provided", "extracted", "none"]
Dimension = Literal["evidence", "coherence", "completeness", "uncertainty"]


class Data(BaseModel):
    """Base: `dump()` leaves out the optional keys named in OMIT_WHEN_NONE when they are None
    (`model` and `discrete` stay: their null says something)."""

    model_config = ConfigDict(extra="forbid")
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()

    def dump(self) -> dict[str, Any]:
        out = self.model_dump(mode="json")
        return {k: v for k, v in out.items() if not (v is None and k in self.OMIT_WHEN_NONE)}


class ConfidenceFactor(Data):
    dimension: Dimension
    score: Unit
    weight: Unit
    explanation: str


class ConfidenceDimensions(Data):
    evidenceQuality: Unit
    reasoningCoherence: Unit
    completeness: Unit
    uncertaintyLevel: Unit  # the one dimension where higher means less confidence
    biasFreedom: Unit


class EvidenceItem(Data):
    """An evidence statement found in the reasoning itself."""

    statement: str
    type: EvidenceType
    confidence: Unit  # how specific it is (signals.specificity)


class ConfidenceAssessment(Data):
    OMIT_WHEN_NONE = frozenset({"extractedEvidence"})

    overallConfidence: Unit
    dimensions: ConfidenceDimensions
    interpretation: str
    warnings: list[str]
    recommendations: list[str]
    uncertaintyType: UncertaintyType
    factors: list[ConfidenceFactor]
    timestamp: str
    processingTime: int
    extractedEvidence: list[EvidenceItem] | None = None
    method: Method = RULE_BASED
    model: str | None = None


class BiasLocation(Data):
    stepIndex: int = Field(ge=0)  # the sentence's index in the reasoning
    reasoning: str  # that sentence
    context: str  # the caller's context, else the sentences around it


class CorrectionDetails(Data):
    techniques: list[str]
    challengeQuestions: list[str]


class DetectedBias(Data):
    type: BiasType
    severity: Unit
    evidence: list[str]
    correction: str  # the main corrective suggestion, one sentence
    confidence: Unit
    location: BiasLocation
    explanation: str
    detectedAt: str
    correctionDetails: CorrectionDetails

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        out["location"] = self.location.dump()
        return out


class BiasReport(Data):
    biases: list[DetectedBias]
    detectionTime: float  # seconds
    monitoringActive: Literal[False] = False
    method: Method = RULE_BASED
    model: str | None = None

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        out["biases"] = [b.dump() for b in self.biases]
        return out


class Circumplex(Data):
    valence: Signed
    arousal: Unit
    dominance: Signed
    confidence: Unit
    timestamp: str


class EmotionScore(Data):
    emotion: EmotionName
    score: Unit
    intensity: Intensity  # the band of `score` (emotion.intensity_of)
    confidence: Unit
    evidence: list[str]


class DiscreteEmotions(Data):
    primary: EmotionName | None  # the highest-scoring emotion; None when no emotion was found
    emotions: list[EmotionScore]  # by score, highest first
    confidence: Unit


class EmotionReport(Data):
    circumplex: Circumplex
    discrete: DiscreteEmotions | None  # None when discrete emotions were not asked for
    detectionTime: float  # milliseconds
    method: Method = RULE_BASED
    model: str | None = None


class Quality(Data):
    coherence: Unit
    completeness: Unit
    logicalValidity: Unit
    evidenceSupport: Unit


class Evaluation(Data):
    OMIT_WHEN_NONE = frozenset({"confidence", "biases", "emotion"})

    quality: Quality
    strengths: list[str]
    weaknesses: list[str]
    recommendations: list[str]
    confidence: ConfidenceAssessment | None = None
    biases: list[DetectedBias] | None = None
    emotion: Circumplex | None = None
    method: Method = RULE_BASED
    model: str | None = None

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        if self.confidence is not None:
            out["confidence"] = self.confidence.dump()
        if self.biases is not None:
            out["biases"] = [b.dump() for b in self.biases]
        return out
