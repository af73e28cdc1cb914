"""evaluate offline: reasoning quality, strengths, weaknesses and recommendations from its signals.

quality:
- coherence and completeness: as assess_confidence scores them;
- evidenceSupport: assess_confidence's evidence quality (evidence found in the reasoning);
- logicalValidity: 0.6, + 0.15 when a conclusion stands with evidence beside it, + 0.1 with an
  inference word (therefore, because…), − 0.2 per contradiction, − 0.15 for absolute claims
  (always, never, proves…) with no evidence, − 0.1 per bias the rules report at severity 0.6 or
  more (at most two).
Strengths and weaknesses are chosen from what was found, each quoting what it rests on; every
weakness brings its recommendation.
"""

from __future__ import annotations

from collections.abc import Sequence

from cairn.services.thoughtmcp.metacognition.confidence import Scores
from cairn.services.thoughtmcp.metacognition.models import DetectedBias, Quality
from cairn.services.thoughtmcp.metacognition.signals import Signals
from cairn.services.thoughtmcp.metacognition.text import score

QUOTE_CHARS = 80


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text}"' if len(text) <= QUOTE_CHARS else f'"{text[: QUOTE_CHARS - 1]}…"'


def _cues(cues: Sequence[str], limit: int = 3) -> str:
    return ", ".join(f'"{c}"' for c in list(dict.fromkeys(cues))[:limit])


def quality(signals: Signals, scores: Scores, biases: Sequence[DetectedBias]) -> Quality:
    validity = 0.6
    if signals.conclusion and signals.evidence_statements:
        validity += 0.15
    if signals.inference:
        validity += 0.1
    validity -= 0.2 * len(signals.contradictions)
    if signals.absolutes and not signals.evidence_statements:
        validity -= 0.15
    validity -= 0.1 * min(2, sum(1 for b in biases if b.severity >= 0.6))
    return Quality(
        coherence=scores.coherence,
        completeness=scores.completeness,
        logicalValidity=score(validity),
        evidenceSupport=scores.evidence,
    )


def findings(
    signals: Signals, scores: Scores, biases: Sequence[DetectedBias]
) -> tuple[list[str], list[str], list[str]]:
    """(strengths, weaknesses, recommendations)."""
    strengths: list[str] = []
    weaknesses: list[str] = []
    advice: list[str] = []
    statements = signals.evidence_statements
    if statements:
        strengths.append(
            f"Supports its claims with evidence ({len(statements)} statement(s), "
            f"e.g. {_quote(statements[0])})"
        )
    else:
        weaknesses.append("No supporting evidence: no data, measurement or source backs the claims")
        advice.append("Add the data, measurements or sources the conclusion rests on")
    if signals.numbers:
        strengths.append(f"Quantifies its claims ({signals.numbers} figure(s))")
    if signals.inference:
        strengths.append(f"Links its steps explicitly ({_cues(signals.inference)})")
    elif len(signals.sentences) > 1:
        weaknesses.append("The steps are not linked: no inference words connect the statements")
        advice.append("Make each step follow from the previous one (because…, therefore…)")
    if signals.alternatives:
        strengths.append(f"Considers alternatives ({_cues(signals.alternatives)})")
    else:
        weaknesses.append("No alternative options or explanations are considered")
        advice.append("Compare the conclusion with at least one alternative and say why it wins")
    if signals.limitations:
        strengths.append(f"Acknowledges limitations or risks ({_cues(signals.limitations)})")
    else:
        weaknesses.append("Limitations, risks and assumptions are not stated")
        advice.append("State the main assumptions and what could make the conclusion wrong")
    if signals.conclusion:
        strengths.append(f"States a conclusion ({_cues(signals.conclusion)})")
    else:
        weaknesses.append("No explicit conclusion or decision")
        advice.append("End with the conclusion or decision the reasoning supports")
    for contradiction in signals.contradictions:
        weaknesses.append(f"Contradicts itself ({contradiction})")
        advice.append("Resolve the contradiction or explain the conditions under which each claim holds")
    if scores.uncertainty >= 0.5:
        weaknesses.append(f"Heavily hedged ({_cues(signals.hedges + signals.chance)})")
        advice.append("Find out what is unknown, or quantify the uncertainty instead of hedging")
    if signals.absolutes and not statements:
        weaknesses.append(f"Absolute claims without evidence ({_cues(signals.absolutes)})")
        advice.append("Qualify the absolute claims or back them with evidence")
    for bias in biases:
        quote = _quote(bias.evidence[0]) if bias.evidence else _quote(bias.location.reasoning)
        weaknesses.append(f"Possible {bias.type.replace('_', ' ')} bias: {quote}")
        advice.append(bias.correction)
    return strengths, weaknesses, list(dict.fromkeys(advice))
