"""MetacognitionService: ThoughtMCP's assess_confidence, detect_bias, detect_emotion and evaluate.

Each call returns `(data, metadata)`: `data` is the tool's object (models.py), marked with how it
was made (`method`, `model`), and `metadata` is {timestamp, processingTime (ms), componentsUsed}
(+ evidenceSource for assess_confidence). With the offline extractive generator the rule engines
answer (method "rule-based", model None); with a language model configured the model answers
through model_path (method "language-model", its model id) or the call fails with
MetacognitionFailed. Empty reasoning is answered by the rules either way: there is nothing to ask.
A text over limits.MAX_TEXT characters is refused (a ThoughtError) before anything reads it.
docs/METACOGNITION.md describes what every engine computes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC
from typing import Any, Final

from cairn.domain.js_text import js_blank
from cairn.ports.clock import Clock, SystemClock
from cairn.ports.generator import Generator
from cairn.services.memory.model_calls import offline
from cairn.services.thoughtmcp.metacognition import (
    bias,
    confidence,
    emotion,
    evaluation,
    interpretation,
    model_path,
)
from cairn.services.thoughtmcp.metacognition.limits import check_texts
from cairn.services.thoughtmcp.metacognition.models import (
    LANGUAGE_MODEL,
    BiasReport,
    Circumplex,
    ConfidenceAssessment,
    ConfidenceDimensions,
    ConfidenceFactor,
    CorrectionDetails,
    DetectedBias,
    DiscreteEmotions,
    EmotionReport,
    EmotionScore,
    Evaluation,
    EvidenceSource,
)
from cairn.services.thoughtmcp.metacognition.signals import read
from cairn.services.thoughtmcp.metacognition.text import sentences
from cairn.services.thoughtmcp.models import iso, reply_metadata

TIMEOUT_S: Final = 60.0

CONFIDENCE_COMPONENTS: Final = ["confidenceAssessor"]
BIAS_COMPONENTS: Final = ["biasDetector", "biasCorrector"]
EMOTION_COMPONENTS: Final = ["emotionAnalyzer"]
DISCRETE_COMPONENT: Final = "discreteEmotionClassifier"
QUALITY_COMPONENT: Final = "qualityAnalyzer"
VALIDATION_COMPONENT: Final = "validation"


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


class MetacognitionService:
    def __init__(
        self, generator: Generator, *, clock: Clock | None = None, timeout_s: float = TIMEOUT_S
    ) -> None:
        self.generator = generator
        self.clock = clock or SystemClock()
        self.timeout_s = timeout_s

    # --- helpers ------------------------------------------------------------------------------

    @property
    def _model(self) -> str | None:
        """The model id when a language model answers, None when the rules do."""
        return None if offline(self.generator) else self.generator.model_id

    def _now(self) -> str:
        return iso(self.clock.now().astimezone(UTC))

    def _metadata(self, started: float, components: Sequence[str], **extra: Any) -> dict[str, Any]:
        return reply_metadata(self.clock.now(), started, components, **extra)

    # --- assess_confidence ----------------------------------------------------------------------

    def _confidence(
        self,
        reasoning: str,
        evidence: Sequence[str] | None,
        context: str | None,
        rule_biases: Sequence[DetectedBias] | None = None,
    ) -> tuple[ConfidenceAssessment, EvidenceSource, bool]:
        """(assessment, evidence source, whether the reasoning was empty). `rule_biases`: what
        bias.detect already found in this reasoning, when the caller has it."""
        started = time.perf_counter()
        if js_blank(reasoning):
            result = confidence.empty_assessment(timestamp=self._now())
            return result.model_copy(update={"processingTime": _ms(started)}), "none", True
        signals = read(reasoning)
        now = self._now()
        if rule_biases is None:
            rule_biases = bias.detect(reasoning, detected_at=now)
        rules, source = confidence.assessment(signals, evidence, rule_biases, timestamp=now)
        model = self._model
        if model is not None:
            rules = self._confidence_by_model(reasoning, evidence, context, rules, source, model)
        return rules.model_copy(update={"processingTime": _ms(started)}), source, False

    def _confidence_by_model(
        self,
        reasoning: str,
        evidence: Sequence[str] | None,
        context: str | None,
        rules: ConfidenceAssessment,
        source: EvidenceSource,
        model: str,
    ) -> ConfidenceAssessment:
        shown = (
            [e for e in evidence or [] if not js_blank(e)]
            if source == "provided"
            else [e.statement for e in rules.extractedEvidence or []]
        )
        reply = model_path.ask(
            self.generator,
            "assess_confidence",
            model_path.CONFIDENCE_PROMPT,
            model_path.passages(
                reasoning=reasoning, evidence="\n".join(f"- {e}" for e in shown), context=context
            ),
            model_path.ConfidenceReply,
            timeout_s=self.timeout_s,
        )
        weights = confidence.WEIGHTS
        d = reply.dimensions
        dimensions = ConfidenceDimensions(
            evidenceQuality=d.evidenceQuality,
            reasoningCoherence=d.reasoningCoherence,
            completeness=d.completeness,
            uncertaintyLevel=d.uncertaintyLevel,
            biasFreedom=d.biasFreedom,
        )
        total = confidence.overall(
            d.evidenceQuality, d.reasoningCoherence, d.completeness, d.uncertaintyLevel
        )
        return ConfidenceAssessment(
            overallConfidence=total,
            dimensions=dimensions,
            interpretation=interpretation.interpretation(total, dimensions),
            warnings=reply.warnings,
            recommendations=reply.recommendations,
            uncertaintyType=reply.uncertaintyType,
            factors=[
                ConfidenceFactor(
                    dimension="evidence",
                    score=d.evidenceQuality,
                    weight=weights["evidence"],
                    explanation=reply.explanations.evidence,
                ),
                ConfidenceFactor(
                    dimension="coherence",
                    score=d.reasoningCoherence,
                    weight=weights["coherence"],
                    explanation=reply.explanations.coherence,
                ),
                ConfidenceFactor(
                    dimension="completeness",
                    score=d.completeness,
                    weight=weights["completeness"],
                    explanation=reply.explanations.completeness,
                ),
                ConfidenceFactor(
                    dimension="uncertainty",
                    score=round(1.0 - d.uncertaintyLevel, 3),
                    weight=weights["uncertainty"],
                    explanation=reply.explanations.uncertainty,
                ),
            ],
            timestamp=rules.timestamp,
            processingTime=0,
            extractedEvidence=rules.extractedEvidence,
            method=LANGUAGE_MODEL,
            model=model,
        )

    def assess_confidence(
        self, reasoning: str, evidence: Sequence[str] | None = None, context: str | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        check_texts(reasoning=reasoning, evidence=evidence, context=context)
        started = time.perf_counter()
        result, source, empty = self._confidence(reasoning, evidence, context)
        components = [VALIDATION_COMPONENT] if empty else CONFIDENCE_COMPONENTS
        return result.dump(), self._metadata(started, components, evidenceSource=source)

    # --- detect_bias ----------------------------------------------------------------------------

    def _biases(self, reasoning: str, context: str | None) -> list[DetectedBias]:
        now = self._now()
        model = self._model
        if model is None or js_blank(reasoning):
            return bias.detect(reasoning, detected_at=now, context=context)
        steps = sentences(reasoning)

        def check(reply: model_path.BiasReply) -> list[str]:
            problems: list[str] = []
            for i, found in enumerate(reply.biases):
                if found.sentenceIndex >= len(steps):
                    problems.append(f"biases[{i}].sentenceIndex is past the last sentence ({len(steps) - 1})")
                problems += model_path.quotes_in(reasoning, found.evidence, f"biases[{i}].evidence")
            return problems

        numbered = "\n".join(f"[{i}] {s}" for i, s in enumerate(steps))
        reply = model_path.ask(
            self.generator,
            "detect_bias",
            model_path.BIAS_PROMPT,
            model_path.passages(reasoning=numbered, context=context),
            model_path.BiasReply,
            check=check,
            timeout_s=self.timeout_s,
        )
        found = [
            DetectedBias(
                type=b.type,
                severity=b.severity,
                confidence=b.confidence,
                evidence=b.evidence,
                location=bias.location(steps, b.sentenceIndex, context),
                explanation=b.explanation,
                detectedAt=now,
                correction=b.correction,
                correctionDetails=CorrectionDetails(
                    techniques=b.correctionDetails.techniques,
                    challengeQuestions=b.correctionDetails.challengeQuestions,
                ),
            )
            for b in reply.biases
        ]
        return sorted(found, key=lambda b: (-b.severity, b.type))

    def detect_bias(
        self, reasoning: str, context: str | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        check_texts(reasoning=reasoning, context=context)
        started = time.perf_counter()
        found = self._biases(reasoning, context)
        model = None if js_blank(reasoning) else self._model
        report = BiasReport(
            biases=found,
            detectionTime=round(time.perf_counter() - started, 6),
            method=LANGUAGE_MODEL if model else "rule-based",
            model=model,
        )
        return report.dump(), self._metadata(started, BIAS_COMPONENTS)

    # --- detect_emotion -------------------------------------------------------------------------

    def _emotion(
        self, text: str, include_discrete: bool
    ) -> tuple[Circumplex, DiscreteEmotions | None, str | None]:
        now = self._now()
        model = self._model
        if model is None or js_blank(text):
            circumplex, discrete = emotion.detect(text, include_discrete=include_discrete, timestamp=now)
            return circumplex, discrete, None
        reply = model_path.ask(
            self.generator,
            "detect_emotion",
            model_path.EMOTION_PROMPT,
            model_path.passages(text=text),
            model_path.EmotionReply,
            check=lambda reply: model_path.emotion_problems(text, reply),
            timeout_s=self.timeout_s,
        )
        c = reply.circumplex
        circumplex = Circumplex(
            valence=c.valence,
            arousal=c.arousal,
            dominance=c.dominance,
            confidence=c.confidence,
            timestamp=now,
        )
        discrete = None
        if include_discrete:
            found = reply.discrete
            discrete = DiscreteEmotions(
                primary=found.primary,
                emotions=sorted(
                    (
                        EmotionScore(
                            emotion=e.emotion,
                            score=e.score,
                            intensity=e.intensity,
                            confidence=e.confidence,
                            evidence=e.evidence,
                        )
                        for e in found.emotions
                    ),
                    key=lambda e: (-e.score, e.emotion),
                ),
                confidence=found.confidence,
            )
        return circumplex, discrete, model

    def detect_emotion(
        self, text: str, include_discrete: bool = True
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        check_texts(text=text)
        started = time.perf_counter()
        circumplex, discrete, model = self._emotion(text, include_discrete)
        report = EmotionReport(
            circumplex=circumplex,
            discrete=discrete,
            detectionTime=round((time.perf_counter() - started) * 1000, 3),
            method=LANGUAGE_MODEL if model else "rule-based",
            model=model,
        )
        components = [*EMOTION_COMPONENTS, DISCRETE_COMPONENT] if include_discrete else EMOTION_COMPONENTS
        return report.dump(), self._metadata(started, components)

    # --- evaluate -------------------------------------------------------------------------------

    def evaluate(
        self,
        reasoning: str,
        context: str | None = None,
        include_confidence: bool = True,
        include_bias: bool = True,
        include_emotion: bool = False,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        check_texts(reasoning=reasoning, context=context)
        started = time.perf_counter()
        model = None if js_blank(reasoning) else self._model
        signals = read(reasoning)
        rule_biases: list[DetectedBias] | None = None
        if model is None:
            rule_biases = bias.detect(reasoning, detected_at=self._now(), context=context)
            scores = confidence.compute(signals, None)
            strengths, weaknesses, advice = evaluation.findings(signals, scores, rule_biases)
            result = Evaluation(
                quality=evaluation.quality(signals, scores, rule_biases),
                strengths=strengths,
                weaknesses=weaknesses,
                recommendations=advice,
            )
        else:
            reply = model_path.ask(
                self.generator,
                "evaluate",
                model_path.EVALUATION_PROMPT,
                model_path.passages(reasoning=reasoning, context=context),
                model_path.EvaluationReply,
                timeout_s=self.timeout_s,
            )
            result = Evaluation(
                quality=reply.quality,
                strengths=reply.strengths,
                weaknesses=reply.weaknesses,
                recommendations=reply.recommendations,
                method=LANGUAGE_MODEL,
                model=model,
            )
        components = [QUALITY_COMPONENT]
        if include_confidence:
            result.confidence = self._confidence(reasoning, None, context, rule_biases)[0]
            components += CONFIDENCE_COMPONENTS
        if include_bias:
            result.biases = self._biases(reasoning, context)
            components += BIAS_COMPONENTS
        if include_emotion:
            result.emotion = self._emotion(reasoning, False)[0]
            components += EMOTION_COMPONENTS
        return result.dump(), self._metadata(started, components)
