"""assess_confidence's reading of its scores: interpretation, warnings and recommendations.

- interpretation (both paths): the overallConfidence band — "High confidence" from 0.7,
  "Moderate confidence" from 0.4, else "Low confidence" — then the weakest dimension: the lowest
  of evidenceQuality, reasoningCoherence, completeness, 1 − uncertaintyLevel and biasFreedom
  (the first in that order on ties), named with its value.
- warnings (rules): the hedges and chance words found, quoted; no evidence at all, only the
  reasoning's own statements, or vague evidence given; each contradiction; each detected bias with
  its first quote; absolute claims with no evidence.
- recommendations (rules): one action per weak dimension (a score below 0.6, an uncertaintyLevel
  above 0.4), naming what is missing; each detected bias's correction; when nothing is weak, one
  follow-up check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cairn.services.thoughtmcp.metacognition.models import ConfidenceDimensions, DetectedBias
from cairn.services.thoughtmcp.metacognition.signals import Signals

HIGH: Final = 0.7
MODERATE: Final = 0.4
WEAK: Final = 0.6  # a dimension scoring below this is weak
UNCERTAIN: Final = 0.4  # an uncertaintyLevel above this is weak
QUOTE_CHARS: Final = 80

_BANDS: Final = (
    (HIGH, "High confidence - the reasoning holds up"),
    (MODERATE, "Moderate confidence - the reasoning is partly supported"),
    (0.0, "Low confidence - the reasoning is poorly supported"),
)


def listed(cues: Sequence[str], limit: int = 4) -> str:
    return ", ".join(f'"{c}"' for c in list(dict.fromkeys(cues))[:limit])


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text}"' if len(text) <= QUOTE_CHARS else f'"{text[: QUOTE_CHARS - 1]}…"'


def band(overall: float) -> str:
    return next(text for floor, text in _BANDS if overall >= floor)


def weakest(d: ConfidenceDimensions) -> str:
    """The weakest dimension, named with its value."""
    candidates = [
        (d.evidenceQuality, f"evidence quality ({d.evidenceQuality:.2f})"),
        (d.reasoningCoherence, f"reasoning coherence ({d.reasoningCoherence:.2f})"),
        (d.completeness, f"completeness ({d.completeness:.2f})"),
        (1.0 - d.uncertaintyLevel, f"uncertainty (level {d.uncertaintyLevel:.2f})"),
        (d.biasFreedom, f"bias freedom ({d.biasFreedom:.2f})"),
    ]
    return min(candidates, key=lambda c: c[0])[1]


def interpretation(overall: float, dimensions: ConfidenceDimensions) -> str:
    return f"{band(overall)}; its weakest dimension is {weakest(dimensions)}."


def _bias_name(bias: DetectedBias) -> str:
    return bias.type.replace("_", " ")


def warnings(
    signals: Signals, evidence_source: str, evidence_quality: float, biases: Sequence[DetectedBias]
) -> list[str]:
    out: list[str] = []
    if signals.hedges:
        out.append(f"Hedged claims: {listed(signals.hedges)}.")
    if signals.chance:
        out.append(f"Outcomes described as random or variable: {listed(signals.chance)}.")
    if evidence_source == "none":
        out.append("No evidence was given and none was found in the reasoning.")
    elif evidence_source == "extracted":
        count = len(signals.evidence_statements)
        out.append(f"No evidence was given; the only support is the reasoning's own {count} statement(s).")
    elif evidence_quality < WEAK:
        out.append("The evidence given is vague: few numbers, measurements or named sources.")
    out += [f"The reasoning contradicts itself: {c}." for c in signals.contradictions]
    for bias in biases:
        quote = _quote(bias.evidence[0]) if bias.evidence else _quote(bias.location.reasoning)
        out.append(f"Possible {_bias_name(bias)} bias: {quote}.")
    if signals.absolutes and evidence_source == "none":
        out.append(f"Absolute claims without evidence: {listed(signals.absolutes)}.")
    return out


def recommendations(
    signals: Signals,
    dimensions: ConfidenceDimensions,
    evidence_source: str,
    biases: Sequence[DetectedBias],
) -> list[str]:
    d = dimensions
    out: list[str] = []
    if d.evidenceQuality < WEAK:
        if evidence_source == "provided":
            out.append("Replace vague evidence with specific figures and named sources (reports, metrics…).")
        elif evidence_source == "extracted":
            out.append(
                "Back the reasoning's own claims with separate evidence: data, measurements or sources."
            )
        else:
            out.append("Add the data, measurements or sources the conclusion rests on.")
    if d.reasoningCoherence < WEAK:
        if signals.contradictions:
            out.append(
                f"Resolve the contradiction ({signals.contradictions[0]}) or state when each claim holds."
            )
        else:
            out.append("Link the steps explicitly (because…, therefore…) so each follows from the last.")
    if d.completeness < WEAK:
        if not signals.alternatives:
            out.append("Compare the conclusion with at least one alternative and say why it wins.")
        if not signals.limitations:
            out.append("State the main assumptions, risks or limitations.")
        if not signals.conclusion:
            out.append("State the conclusion or decision the reasoning leads to.")
    if d.uncertaintyLevel > UNCERTAIN:
        hedged = listed(signals.hedges + signals.chance)
        left_open = f" ({hedged})" if hedged else ""
        out.append(f"Find out or quantify what is left open{left_open} instead of hedging.")
    out += [bias.correction for bias in biases]
    if not out:
        out.append("No dimension is weak; check the conclusion against the outcome once it is known.")
    return list(dict.fromkeys(out))
