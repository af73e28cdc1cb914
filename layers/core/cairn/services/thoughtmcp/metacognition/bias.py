"""detect_bias offline: pattern rules per bias type, over the reasoning's sentences.

Each bias type has cue patterns with weights (below, composed for Cairn). A type is reported when
its cues across the reasoning weigh at least 1.0, so a lone weak cue ("typical", "latest") is not
enough. For a reported type:
- evidence: the text each cue matched (a cue runs to the end of its clause), in order, at most 5;
- location: the sentence whose cues weigh most (first on ties), by index and text;
- severity 0.3 + 0.25 · weight (at most 0.95); confidence 0.4 + 0.15 per distinct cue (at most 0.95);
- correction: the type's corrective suggestion (one sentence); correctionDetails: its debiasing
  techniques and challenge questions.
Biases are ordered by severity, then type. The context is not scanned: only the reasoning can be
quoted and located.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cairn.domain.js_text import js_trim
from cairn.services.thoughtmcp.metacognition.models import (
    BiasLocation,
    BiasType,
    CorrectionDetails,
    DetectedBias,
)
from cairn.services.thoughtmcp.metacognition.text import score, sentences

THRESHOLD: Final = 1.0
MAX_EVIDENCE: Final = 5
MAX_QUOTE: Final = 200

_CLAUSE = r"[^.;:!?\n]{0,160}"  # the rest of the clause (bounded: no runaway backtracking)
_NUMBER = r"(?:[$€£]\s?)?\d[\d,.]*\s?(?:%|k|m|bn|million|billion|thousand|percent)?"


@dataclass(frozen=True)
class Cue:
    pattern: re.Pattern[str]
    weight: float


def _cue(regex: str, weight: float) -> Cue:
    return Cue(re.compile(regex, re.I), weight)


RULES: Final[dict[BiasType, tuple[Cue, ...]]] = {
    "confirmation": (
        _cue(
            r"\b(?:all|every)\b(?: of)?(?: the)? (?:data|evidence|"
            r"results?|studies|research|feedback|signs?|numbers)"
            + _CLAUSE
            + r"\b(?:supports?|confirms?|proves?|backs? up)\b"
            + _CLAUSE,
            1.0,
        ),
        _cue(
            r"\b(?:supports?|confirms?|validates?) (?:my|our) "
            r"(?:hypothesis|theory|belief|view|assumption|position|"
            r"intuition|expectation)s?\b" + _CLAUSE,
            0.7,
        ),
        _cue(r"\b(?:this|that|it|which) (?:clearly |definitely )?proves?\b" + _CLAUSE, 0.7),
        _cue(
            r"\b(?:ignore|dismiss|disregard|discount|set aside)\b(?: the| any| those)? (?:counter|contrary|"
            r"contradict\w*|opposing|negative|conflicting|dissenting)" + _CLAUSE,
            0.9,
        ),
        _cue(r"\b(?:only|just) (?:looked at|considered|cited|read|collected|kept)\b" + _CLAUSE, 0.6),
        _cue(r"\b(?:as i expected|as we expected|(?:i|we) knew it all along|just as predicted)\b", 0.6),
        _cue(
            r"\b(?:outliers?|exceptions?|anomal(?:y|ies)) (?:do "
            r"not|don't|doesn't|does not) (?:count|matter)\b",
            0.8,
        ),
    ),
    "anchoring": (
        _cue(
            r"\b(?:initial|first|original|opening|starting) "
            r"(?:estimate|quote|offer|price|guess|number|figure|"
            r"projection|forecast|valuation|bid|ask)s?\b" + _CLAUSE,
            0.7,
        ),
        _cue(r"\bstart(?:ed|s)? (?:at|from|with) " + _NUMBER + _CLAUSE, 0.7),
        _cue(
            r"\b(?:stick|stay|keep|remain) (?:close to|near|with|"
            r"around) (?:the|our|my|that) (?:initial|first|"
            r"original|earlier)\b" + _CLAUSE,
            0.7,
        ),
        _cue(r"\bbased on (?:the|our|my) (?:initial|first|original|earlier)\b" + _CLAUSE, 0.6),
        _cue(r"\badjust(?:ed|ing)? (?:slightly|a little|a bit|down|up) from\b" + _CLAUSE, 0.5),
    ),
    "availability": (
        _cue(r"\b(?:i|we) (?:just |recently )?(?:heard|read|saw) (?:about|that|of|a story)\b" + _CLAUSE, 0.6),
        _cue(r"\brecently (?:heard|read|saw|seen)\b" + _CLAUSE, 0.6),
        _cue(r"\b(?:in|on|all over) the news\b" + _CLAUSE, 0.5),
        _cue(
            r"\b(?:a|my|one) (?:friend|colleague|coworker|co-worker|"
            r"neighbo(?:u)?r|relative|cousin|someone i know)"
            r" (?:had|told|got|lost|said|was)\b" + _CLAUSE,
            0.6,
        ),
        _cue(r"\b(?:i|we) (?:still )?remember (?:when|a|one|that)\b" + _CLAUSE, 0.4),
        _cue(r"\b(?:horror stor(?:y|ies)|that one time|vivid(?:ly)?|unforgettable)\b" + _CLAUSE, 0.5),
        _cue(
            r"\b(?:so|therefore|clearly) (?:it|this|that|they|these) (?:must|will|always|never|is bound to)\b"
            + _CLAUSE,
            0.4,
        ),
    ),
    "recency": (
        _cue(r"\b(?:the )?(?:latest|most recent(?:ly)?)\b" + _CLAUSE, 0.5),
        _cue(
            r"\b(?:last|this|past) (?:week|month|quarter|sprint|release|few days|couple of days|year)\b"
            + _CLAUSE,
            0.5,
        ),
        _cue(r"\b(?:yesterday|just happened|just released)\b" + _CLAUSE, 0.4),
        _cue(
            r"\brecent (?:results?|data|trends?|numbers|quarter|events?|performance|incidents?)\b" + _CLAUSE,
            0.5,
        ),
        _cue(
            r"\b(?:will (?:continue|keep)|going forward|from now on|is the new normal|trend (?:will|is))\b"
            + _CLAUSE,
            0.5,
        ),
    ),
    "representativeness": (
        _cue(r"\b(?:typical|stereotypical|classic(?:al)? case of)\b" + _CLAUSE, 0.6),
        _cue(r"\b(?:fits|matches) the (?:profile|pattern|type)\b" + _CLAUSE, 0.8),
        _cue(r"\b(?:looks|seems|sounds) like (?:a|an|the) (?:typical|classic|real)\b" + _CLAUSE, 0.6),
        _cue(
            r"\b(?:only |just )?(?:one|two|three|a few|a couple of|1|2|3) (?:customers|users|people|cases|"
            r"examples|interviews|clients|companies|teams|tests)\b"
            + _CLAUSE
            + r"\b(?:so|therefore|which means)"
            r" (?:all|every|most|everyone|everybody|nobody|no one)\b" + _CLAUSE,
            1.0,
        ),
        _cue(r"\b(?:people|guys|folks|types) like (?:that|them|him|her)\b" + _CLAUSE, 0.6),
        _cue(
            r"\b(?:all|every) (?:engineers|developers|managers|startups|salespeople|millennials|boomers|"
            r"users|customers) (?:are|do|want|hate|love)\b" + _CLAUSE,
            0.7,
        ),
        _cue(r"\bmust be (?:a|an) (?:scam|fraud|genius|expert|beginner|amateur)\b" + _CLAUSE, 0.5),
    ),
    "framing": (
        _cue(
            _NUMBER
            + r" (?:chance|probability|rate|risk)? ?(?:of )?(?:success|survival|survive|failure|fail|death|"
            r"die|loss|losing)\b" + _CLAUSE,
            0.6,
        ),
        _cue(r"\b(?:you|we|they) (?:will|would|could|stand to) lose\b" + _CLAUSE, 0.6),
        _cue(r"\b(?:avoid|prevent) (?:losing|a loss|losses)\b" + _CLAUSE, 0.6),
        _cue(r"\b(?:miss out|lose out|left behind|don't miss|do not miss|cost(?:s)? you)\b" + _CLAUSE, 0.6),
        _cue(r"\b(?:save|saving|saves|gain|gains|win) " + _NUMBER + _CLAUSE, 0.5),
        _cue(r"\b" + _NUMBER + r" (?:fat[- ]free|effective|guaranteed|risk[- ]free)\b" + _CLAUSE, 0.6),
        _cue(
            r"\b(?:only|just) " + _NUMBER + r" (?:of (?:users|people|customers) )?(?:fail|lose|die|churn|"
            r"complain)\b" + _CLAUSE,
            0.6,
        ),
    ),
    "sunk_cost": (
        _cue(
            r"\balready (?:spent|invested|put|sunk|poured|committed|paid|dedicated|burned|burnt)\b" + _CLAUSE,
            1.0,
        ),
        _cue(
            r"\b(?:can't|cannot|can not|mustn't|shouldn't) (?:waste|"
            r"throw away|give up|stop|quit|abandon|walk away|"
            r"back out|turn back)\b" + _CLAUSE,
            0.7,
        ),
        _cue(
            r"\btoo (?:much|far|deep) (?:invested|in|along|into "
            r"it) to (?:stop|quit|turn back|give up|change)\b" + _CLAUSE,
            1.0,
        ),
        _cue(r"\bafter all (?:the|that|this|our|my) (?:time|money|effort|work|investment)\b" + _CLAUSE, 0.8),
        _cue(r"\b(?:come|gone) this far\b" + _CLAUSE, 0.8),
        _cue(r"\b(?:months|years|weeks) of (?:work|effort|investment|development)\b" + _CLAUSE, 0.4),
        _cue(
            r"\b(?:waste|wasting|throw away|throwing away) (?:all "
            r")?(?:the|that|this|our|my) (?:money|time|effort|"
            r"work|investment)\b" + _CLAUSE,
            0.7,
        ),
    ),
    "attribution": (
        _cue(
            r"\b(?:he|she|they|the team|the vendor|the user|users|developers|management) (?:is|are|was|were) "
            r"(?:just |simply |so |too )?(?:lazy|incompetent|"
            r"stupid|careless|sloppy|dishonest|selfish|unreliable|"
            r"irresponsible|arrogant|clueless|useless|hopeless|difficult)\b" + _CLAUSE,
            0.8,
        ),
        _cue(
            r"\b(?:that's|that is|it's|it is) (?:just )?(?:who|how) (?:he|she|they) (?:is|are)\b" + _CLAUSE,
            0.8,
        ),
        _cue(r"\b(?:his|her|their) (?:fault|personality|character|attitude|nature)\b" + _CLAUSE, 0.6),
        _cue(
            r"\bbecause (?:he|she|they) (?:is|are|was|were|doesn't|don't|didn't|does not|do not|did not) "
            r"(?:lazy|careless|incompetent|care|bother|try)\b" + _CLAUSE,
            0.6,
        ),
        _cue(r"\b(?:bad|poor|weak) (?:people|person|employee|engineer|developer|manager)s?\b" + _CLAUSE, 0.5),
    ),
}
"""Cue patterns per bias type: (regex, weight)."""

SITUATIONAL: Final = re.compile(
    r"\b(?:because of|due to|given|owing to|under|caused by)\b[^.;!?]{0,40}?\b(?:deadlines?|workload|process|"
    r"tooling|circumstances?|situation|understaffing|"
    r"understaffed|resources|pressure|constraints?|requirements|"
    r"incentives|information)\b",
    re.I,
)
"""Situational explanations: when the reasoning offers one, character blame weighs 0.4 less."""

EXPLANATIONS: Final[dict[BiasType, str]] = {
    "confirmation": (
        "The reasoning favours information that supports its view and sets aside what might contradict it."
    ),
    "anchoring": (
        "An initial number or estimate appears to set the reference that later judgements stay close to."
    ),
    "availability": (
        "A recent, vivid or personally recalled example is treated as representative of how often it happens."
    ),
    "recency": "Recent events are weighted as if they outweighed the longer record.",
    "representativeness": (
        "A judgement rests on resemblance to a type, or a small sample is generalised to a whole group."
    ),
    "framing": (
        "The choice is presented in terms of losses or gains that "
        "can change the decision without changing the facts."
    ),
    "sunk_cost": (
        "Past, unrecoverable investment is used as a reason "
        "to continue rather than future costs and benefits."
    ),
    "attribution": "Behaviour is explained by someone's character rather than by the situation they were in.",
}


@dataclass(frozen=True)
class Correction:
    suggestion: str
    details: CorrectionDetails


CORRECTIONS: Final[dict[BiasType, Correction]] = {
    "confirmation": Correction(
        suggestion=(
            "Look for evidence that would prove the conclusion "
            "wrong and weigh it as seriously as the support."
        ),
        details=CorrectionDetails(
            techniques=[
                "Consider the opposite",
                "Pre-register what result would change your mind",
                "Ask a sceptic to review",
            ],
            challengeQuestions=[
                "What evidence would contradict this conclusion?",
                "Which data did we not look at?",
            ],
        ),
    ),
    "anchoring": Correction(
        suggestion=(
            "Re-estimate from independent reference points before looking at the initial figure again."
        ),
        details=CorrectionDetails(
            techniques=[
                "Generate estimates from several independent methods",
                "Use reference-class data",
                "Have someone estimate without seeing the anchor",
            ],
            challengeQuestions=[
                "Would we reach the same number if the first estimate had been different?",
                "Where did the initial figure come from, and how reliable is it?",
            ],
        ),
    ),
    "availability": Correction(
        suggestion="Check base rates instead of relying on the examples that come to mind most easily.",
        details=CorrectionDetails(
            techniques=[
                "Look up base rates",
                "Count cases systematically",
                "Separate vividness from frequency",
            ],
            challengeQuestions=[
                "How often does this actually happen across all cases?",
                "Is this example memorable because it is common or because it is dramatic?",
            ],
        ),
    ),
    "recency": Correction(
        suggestion=(
            "Put the recent events in the context of the longer history before projecting them forward."
        ),
        details=CorrectionDetails(
            techniques=[
                "Compare against a longer time window",
                "Plot the full series",
                "Test whether the change is noise",
            ],
            challengeQuestions=[
                "Does the longer record show the same pattern?",
                "Would we draw this conclusion if the same event had happened a year ago?",
            ],
        ),
    ),
    "representativeness": Correction(
        suggestion=(
            "Weigh the base rate and the sample size, not only how well the case fits a familiar type."
        ),
        details=CorrectionDetails(
            techniques=[
                "Start from base rates",
                "Check the sample size",
                "Look for counterexamples within the group",
            ],
            challengeQuestions=[
                "How large is the sample behind this generalisation?",
                "How many cases that fit the type turn out differently?",
            ],
        ),
    ),
    "framing": Correction(
        suggestion=(
            "Restate the options in both loss and gain terms and check that the preference does not change."
        ),
        details=CorrectionDetails(
            techniques=[
                "Reframe in the opposite terms",
                "Use absolute numbers alongside percentages",
                "Compare options on the same baseline",
            ],
            challengeQuestions=[
                "Would the decision change if the same facts were phrased as a gain (or a loss)?",
                "What are the absolute numbers behind the percentages?",
            ],
        ),
    ),
    "sunk_cost": Correction(
        suggestion=(
            "Decide on future costs and benefits only: what is already spent cannot be recovered either way."
        ),
        details=CorrectionDetails(
            techniques=[
                "Zero-based evaluation",
                "Ask what a newcomer would decide",
                "Set explicit kill criteria",
            ],
            challengeQuestions=[
                "If we were starting today, with nothing invested, would we choose this?",
                "What will the next unit of investment buy?",
            ],
        ),
    ),
    "attribution": Correction(
        suggestion=(
            "Look for situational causes (workload, process, "
            "information, incentives) before blaming character."
        ),
        details=CorrectionDetails(
            techniques=[
                "List situational factors",
                "Ask how others behaved in the same situation",
                "Talk to the person involved",
            ],
            challengeQuestions=[
                "What about the situation could have led to this behaviour?",
                "Would someone else have done better under the same conditions?",
            ],
        ),
    ),
}


def _quote(text: str) -> str:
    text = " ".join(text.split()).strip(" ,")
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…"


def location(steps: list[str], index: int, context: str | None) -> BiasLocation:
    """Where a bias sits: the sentence, and the caller's context (else the sentences around it)."""
    around = " ".join(steps[max(0, index - 1) : index] + steps[index + 1 : index + 2])
    return BiasLocation(stepIndex=index, reasoning=steps[index], context=js_trim(context or "") or around)


def detect(reasoning: str, *, detected_at: str, context: str | None = None) -> list[DetectedBias]:
    """The biases the rules find in `reasoning` (see the module docstring)."""
    steps = sentences(reasoning)
    situational = bool(SITUATIONAL.search(reasoning))
    found: list[DetectedBias] = []
    for bias_type, cues in RULES.items():
        weight, distinct = 0.0, 0
        quotes: list[tuple[int, int, str]] = []  # (sentence, offset, quote)
        per_sentence: dict[int, float] = {}
        for cue in cues:
            matched = False
            for index, sentence in enumerate(steps):
                for match in cue.pattern.finditer(sentence):
                    matched = True
                    per_sentence[index] = per_sentence.get(index, 0.0) + cue.weight
                    quotes.append((index, match.start(), _quote(match.group(0))))
            if matched:
                weight += cue.weight
                distinct += 1
        if bias_type == "attribution" and situational:
            weight -= 0.4
        if weight < THRESHOLD:
            continue
        ordered = sorted(set(quotes))
        said = {quote for *_, quote in ordered}  # a long text says a few quotes many times over
        inside = {quote for quote in said if any(quote in other for other in said if other != quote)}
        evidence: list[str] = []
        for _, _, quote in ordered:  # a quote inside another is left out
            if quote and quote not in inside:
                evidence.append(quote)
        evidence = list(dict.fromkeys(evidence))[:MAX_EVIDENCE]
        step = max(sorted(per_sentence), key=lambda i: per_sentence[i])
        found.append(
            DetectedBias(
                type=bias_type,
                severity=round(min(0.95, 0.3 + 0.25 * weight), 3),
                confidence=round(min(0.95, 0.4 + 0.15 * distinct), 3),
                evidence=evidence,
                location=location(steps, step, context),
                explanation=EXPLANATIONS[bias_type],
                detectedAt=detected_at,
                correction=CORRECTIONS[bias_type].suggestion,
                correctionDetails=CORRECTIONS[bias_type].details,
            )
        )
    return sorted(found, key=lambda b: (-b.severity, b.type))


def freedom(biases: Sequence[DetectedBias]) -> float:
    """assess_confidence's biasFreedom: 1 − the strongest bias's severity × confidence (1.0 with none)."""
    return score(1.0 - max((b.severity * b.confidence for b in biases), default=0.0))
