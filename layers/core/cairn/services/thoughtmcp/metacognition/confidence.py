"""assess_confidence offline: four scored dimensions and their weighted sum.

- evidence quality: with `evidence` given, the mean specificity of its items (signals.specificity)
  times min(1, 0.6 + 0.15 · items); else from the evidence statements found in the reasoning, the
  same with min(1, 0.5 + 0.15 · statements) and a 0.9 discount (the reasoning vouches for itself);
  0.1 when there is none (evidenceSource "none").
- coherence: 0.45 + 0.35 · min(1, connectives per sentence) + 0.1 with a conclusion + 0.1 with an
  inference word (therefore, because…), − 0.25 per contradiction.
- completeness: 0.2 + 0.25 considering alternatives + 0.2 naming limitations or risks + 0.2 with a
  conclusion + 0.15 with evidence (given or found).
- uncertainty: 0.1 + 0.6 · min(1, (hedges + chance words) per sentence) − 0.05 per assertive word
  (at most two); its type is "aleatoric" when chance words (random, variance, chance…) are at
  least as many as the hedges, else "epistemic" (what is not known rather than what varies).
- bias freedom: 1 − the highest severity × confidence among the biases bias.py finds in the
  reasoning (1.0 when it finds none).
- overallConfidence = 0.3 · evidence + 0.3 · coherence + 0.25 · completeness + 0.15 · (1 − uncertainty),
  clamped to 0..1; the factor for uncertainty is scored 1 − uncertaintyLevel so every factor's
  score × weight adds up to the total. Bias freedom is reported but not weighted: a bias shows in
  the interpretation (when it is the weakest dimension), the warnings and the recommendations.
- interpretation, warnings and recommendations: interpretation.py.
Empty or whitespace-only reasoning is answered without scoring (`empty_assessment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cairn.domain.js_text import js_blank, js_trim
from cairn.services.thoughtmcp.metacognition import bias, interpretation
from cairn.services.thoughtmcp.metacognition.models import (
    ConfidenceAssessment,
    ConfidenceDimensions,
    ConfidenceFactor,
    DetectedBias,
    Dimension,
    EvidenceItem,
    EvidenceSource,
    UncertaintyType,
)
from cairn.services.thoughtmcp.metacognition.signals import (
    Signals,
    evidence_type,
    mean_specificity,
    specificity,
)
from cairn.services.thoughtmcp.metacognition.text import score

WEIGHTS: Final[dict[Dimension, float]] = {
    "evidence": 0.3,
    "coherence": 0.3,
    "completeness": 0.25,
    "uncertainty": 0.15,
}


@dataclass(frozen=True)
class Scores:
    evidence: float
    coherence: float
    completeness: float
    uncertainty: float
    bias_freedom: float
    uncertainty_type: UncertaintyType
    evidence_source: EvidenceSource
    evidence_items: list[str]


def overall(evidence: float, coherence: float, completeness: float, uncertainty: float) -> float:
    return score(
        WEIGHTS["evidence"] * evidence
        + WEIGHTS["coherence"] * coherence
        + WEIGHTS["completeness"] * completeness
        + WEIGHTS["uncertainty"] * (1.0 - uncertainty)
    )


def compute(signals: Signals, evidence: Sequence[str] | None, biases: Sequence[DetectedBias] = ()) -> Scores:
    provided = [js_trim(e) for e in evidence or [] if not js_blank(e)]
    if provided:
        source: EvidenceSource = "provided"
        items = provided
        quality = mean_specificity(items) * min(1.0, 0.6 + 0.15 * len(items))
    elif signals.evidence_statements:
        source = "extracted"
        items = signals.evidence_statements
        quality = 0.9 * mean_specificity(items) * min(1.0, 0.5 + 0.15 * len(items))
    else:
        source, items, quality = "none", [], 0.1
    per_sentence = max(1, len(signals.sentences))
    coherence = (
        0.45
        + 0.35 * min(1.0, len(signals.connectives) / per_sentence)
        + (0.1 if signals.conclusion else 0.0)
        + (0.1 if signals.inference else 0.0)
        - 0.25 * len(signals.contradictions)
    )
    completeness = (
        0.2
        + (0.25 if signals.alternatives else 0.0)
        + (0.2 if signals.limitations else 0.0)
        + (0.2 if signals.conclusion else 0.0)
        + (0.15 if items else 0.0)
    )
    hedges, chance = len(signals.hedges), len(signals.chance)
    uncertainty = (
        0.1 + 0.6 * min(1.0, (hedges + chance) / per_sentence) - 0.05 * min(2, len(signals.assertive))
    )
    return Scores(
        evidence=score(quality),
        coherence=score(coherence),
        completeness=score(completeness),
        uncertainty=score(uncertainty),
        bias_freedom=bias.freedom(biases),
        uncertainty_type="aleatoric" if chance and chance >= hedges else "epistemic",
        evidence_source=source,
        evidence_items=items,
    )


def factors(s: Scores, signals: Signals) -> list[ConfidenceFactor]:
    if s.evidence_source == "provided":
        evidence = (
            f"{len(s.evidence_items)} evidence item(s) provided; specificity from numbers and named sources."
        )
    elif s.evidence_source == "extracted":
        evidence = f"{len(s.evidence_items)} evidence statement(s) found in the reasoning itself."
    else:
        evidence = "No evidence was provided and none was found in the reasoning."
    coherence = f"{len(signals.connectives)} connective(s) over {len(signals.sentences)} sentence(s)"
    coherence += f"; contradictions: {', '.join(signals.contradictions)}." if signals.contradictions else "."
    present = [
        name
        for name, cues in (
            ("alternatives", signals.alternatives),
            ("limitations", signals.limitations),
            ("a conclusion", signals.conclusion),
        )
        if cues
    ]
    completeness = (
        ("Addresses " + ", ".join(present) + ".")
        if present
        else "No alternatives, limitations or conclusion."
    )
    if signals.hedges or signals.chance:
        uncertainty = (
            f"Hedges {interpretation.listed(signals.hedges) or 'none'}; "
            f"chance words {interpretation.listed(signals.chance) or 'none'}."
        )
    else:
        uncertainty = "No hedging or chance words."
    uncertainty += " Scored as 1 − uncertaintyLevel."
    return [
        ConfidenceFactor(
            dimension="evidence", score=s.evidence, weight=WEIGHTS["evidence"], explanation=evidence
        ),
        ConfidenceFactor(
            dimension="coherence", score=s.coherence, weight=WEIGHTS["coherence"], explanation=coherence
        ),
        ConfidenceFactor(
            dimension="completeness",
            score=s.completeness,
            weight=WEIGHTS["completeness"],
            explanation=completeness,
        ),
        ConfidenceFactor(
            dimension="uncertainty",
            score=score(1 - s.uncertainty),
            weight=WEIGHTS["uncertainty"],
            explanation=uncertainty,
        ),
    ]


def dimensions(s: Scores) -> ConfidenceDimensions:
    return ConfidenceDimensions(
        evidenceQuality=s.evidence,
        reasoningCoherence=s.coherence,
        completeness=s.completeness,
        uncertaintyLevel=s.uncertainty,
        biasFreedom=s.bias_freedom,
    )


def assessment(
    signals: Signals,
    evidence: Sequence[str] | None,
    biases: Sequence[DetectedBias],
    *,
    timestamp: str,
) -> tuple[ConfidenceAssessment, EvidenceSource]:
    """The rules' assessment; `biases` are the ones bias.detect found in the same reasoning."""
    s = compute(signals, evidence, biases)
    total = overall(s.evidence, s.coherence, s.completeness, s.uncertainty)
    dims = dimensions(s)
    result = ConfidenceAssessment(
        overallConfidence=total,
        dimensions=dims,
        interpretation=interpretation.interpretation(total, dims),
        warnings=interpretation.warnings(signals, s.evidence_source, s.evidence, biases),
        recommendations=interpretation.recommendations(signals, dims, s.evidence_source, biases),
        uncertaintyType=s.uncertainty_type,
        factors=factors(s, signals),
        timestamp=timestamp,
        processingTime=0,
        extractedEvidence=(
            [
                EvidenceItem(statement=item, type=evidence_type(item), confidence=round(specificity(item), 3))
                for item in s.evidence_items
            ]
            if s.evidence_source == "extracted"
            else None
        ),
    )
    return result, s.evidence_source


def empty_assessment(*, timestamp: str) -> ConfidenceAssessment:
    """The answer for empty or whitespace-only reasoning: nothing to score, so nothing is vouched
    for (bias freedom included) and everything is uncertain."""
    reason = "There is no reasoning to assess."
    return ConfidenceAssessment(
        overallConfidence=0.0,
        dimensions=ConfidenceDimensions(
            evidenceQuality=0.0,
            reasoningCoherence=0.0,
            completeness=0.0,
            uncertaintyLevel=1.0,
            biasFreedom=0.0,
        ),
        interpretation="Low confidence - there is no reasoning to assess.",
        warnings=["The reasoning is empty or only white space."],
        recommendations=["Provide the reasoning to be assessed."],
        uncertaintyType="epistemic",
        factors=[
            ConfidenceFactor(dimension=d, score=0.0, weight=w, explanation=reason) for d, w in WEIGHTS.items()
        ],
        timestamp=timestamp,
        processingTime=0,
    )
