"""What the offline confidence and evaluation engines read in a piece of reasoning.

All cue lists are Cairn's own, matched as whole words, case-insensitively:
- evidence statements: sentences with an evidence marker (because, since, data, shows, measured,
  according to, study, survey, benchmark, observed, tested, metrics…) or a number;
- specificity of one evidence statement: 0.4, +0.25 with a number, +0.25 naming a source or a
  measurement (study, report, benchmark, survey, metrics, a citation such as "[3]", "(Smith, 2020)",
  "et al." or a URL), +0.1 when it has six words or more (at most 1);
- connectives (therefore, because, however, first, then…), contradictions (the same claim asserted
  and denied: "X will Y" and "X will not Y", "is Z" and "is not Z", or both "always" and "never");
- alternatives, limitations and a conclusion (cue lists below);
- hedges (might, maybe, possibly, unclear, assume…), chance words (random, variance, chance…)
  and assertive words (definitely, certainly, proven…).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from cairn.services.thoughtmcp.metacognition.text import cues, find_cues, sentences, unique, words

EVIDENCE_MARKERS: Final = cues(
    "because since data shows show showed shown measured measurement according study "
    "studies survey surveys benchmark benchmarks observed tested test tests experiment "
    "experiments evidence metrics statistics results logs found indicates indicated "
    "demonstrates demonstrated",
    "based on",
    "according to",
)
SOURCE_WORDS: Final = cues(
    "study studies report reports paper papers survey surveys benchmark benchmarks "
    "metrics measured measurement dataset data logs experiment experiments trial trials "
    "audit analysis source sources published documentation test tests",
    "according to",
    "et al",
)
CITATION: Final = re.compile(
    r"\[\d+\]|\([A-Z][A-Za-z-]+(?: et al\.?)?,? \d{4}\)|https?://\S+|\bdoi:\S+", re.I
)
NUMBER: Final = re.compile(r"\d")
CONNECTIVES: Final = cues(
    "therefore thus so because hence consequently however but although though moreover "
    "furthermore additionally since then first second third finally whereas meanwhile "
    "accordingly",
    "as a result",
    "which means",
    "in addition",
    "given that",
    "based on",
    "for example",
    "for instance",
    "this means",
    "it follows",
)
INFERENCE: Final = cues(
    "therefore thus hence consequently because so accordingly",
    "as a result",
    "it follows",
    "which means",
)
ALTERNATIVES: Final = cues(
    "alternative alternatives alternatively otherwise instead option options versus vs "
    "compared comparison tradeoff tradeoffs trade-off trade-offs unless",
    "on the other hand",
    "rather than",
    "compared to",
    "compared with",
    "another approach",
    "other approaches",
)
LIMITATIONS: Final = cues(
    "limitation limitations however risk risks caveat caveats downside downsides drawback "
    "drawbacks although assuming assumption assumptions uncertain constraint constraints",
    "edge case",
    "edge cases",
    "does not cover",
    "doesn't cover",
    "we don't know",
    "not yet known",
)
CONCLUSION: Final = cues(
    "therefore thus hence conclude conclusion overall recommend recommendation decide decided decision",
    "we should",
    "i should",
    "so we",
    "in conclusion",
    "in summary",
    "the best option",
    "the answer is",
)
HEDGES: Final = cues(
    "might may maybe perhaps possibly possible probably likely unlikely could unclear "
    "uncertain assume assuming assumed seems seem appears appear guess roughly "
    "approximately suspect hopefully presumably somewhat arguably",
    "not sure",
    "i think",
    "i believe",
    "we think",
    "we believe",
    "it depends",
    "hard to say",
    "no idea",
)
CHANCE: Final = cues(
    "random randomly randomness variance variability chance chances noise noisy "
    "stochastic fluctuate fluctuates fluctuation fluctuations volatile volatility "
    "probability probabilities odds luck distribution",
)
ASSERTIVE: Final = cues(
    "definitely certainly clearly proven undoubtedly always never guaranteed obviously surely",
    "without doubt",
    "no doubt",
)
ABSOLUTES: Final = cues(
    "always never everyone nobody guaranteed proves proven impossible certainly",
    "all cases",
    "no one",
)

_WILL = re.compile(r"\b(\w+) will (not |never )?(\w+)", re.I)
_WONT = re.compile(r"\b(\w+) won't (\w+)", re.I)
_IS = re.compile(r"\b(\w+) (?:is|are) (not )?(\w+)", re.I)
_FILLERS: Final = cues(
    "a an the very also still just really likely that this it there more less so too quite always never be",
)


@dataclass(frozen=True)
class Signals:
    sentences: list[str]
    word_count: int
    evidence_statements: list[str]
    connectives: list[str]
    inference: list[str]
    contradictions: list[str]
    alternatives: list[str]
    limitations: list[str]
    conclusion: list[str]
    hedges: list[str]
    chance: list[str]
    assertive: list[str]
    absolutes: list[str]
    numbers: int


def specificity(statement: str) -> float:
    """How specific one evidence statement is (see the module docstring)."""
    value = 0.4
    if NUMBER.search(statement):
        value += 0.25
    if find_cues(statement, SOURCE_WORDS) or CITATION.search(statement):
        value += 0.25
    if len(words(statement)) >= 6:
        value += 0.1
    return min(1.0, value)


OBSERVATION_WORDS: Final = cues(
    "observed observe saw seen found noticed tested measured shows showed shown indicates indicated "
    "demonstrates demonstrated reported"
)


EvidenceType = Literal["statistical", "citation", "observation", "reasoning"]


def evidence_type(statement: str) -> EvidenceType:
    """What kind of evidence a statement is: a number makes it statistical, a named source a
    citation, an observation verb an observation; anything else is a reason given in words."""
    if NUMBER.search(statement):
        return "statistical"
    if CITATION.search(statement) or find_cues(statement, SOURCE_WORDS):
        return "citation"
    if find_cues(statement, OBSERVATION_WORDS):
        return "observation"
    return "reasoning"


def mean_specificity(statements: Sequence[str]) -> float:
    return sum(specificity(s) for s in statements) / len(statements) if statements else 0.0


def _contradictions(text: str) -> list[str]:
    claims: dict[tuple[str, str, str], set[bool]] = {}
    for subject, negation, verb in _WILL.findall(text):
        claims.setdefault(("will", subject.lower(), verb.lower()), set()).add(bool(negation))
    for subject, verb in _WONT.findall(text):
        claims.setdefault(("will", subject.lower(), verb.lower()), set()).add(True)
    for subject, negation, predicate in _IS.findall(text):
        claims.setdefault(("is", subject.lower(), predicate.lower()), set()).add(bool(negation))
    found = [
        f"{subject} {kind} / {kind} not {verb}"
        for (kind, subject, verb), polarities in sorted(claims.items())
        if len(polarities) == 2 and verb not in _FILLERS and subject not in _FILLERS
    ]
    lowered = set(words(text))
    if {"always", "never"} <= lowered:
        found.append("always / never")
    return found


def read(reasoning: str) -> Signals:
    """The signals of `reasoning`."""
    steps = sentences(reasoning)
    evidence = [s for s in steps if find_cues(s, EVIDENCE_MARKERS) or NUMBER.search(s)]
    return Signals(
        sentences=steps,
        word_count=len(words(reasoning)),
        evidence_statements=evidence,
        connectives=find_cues(reasoning, CONNECTIVES),
        inference=find_cues(reasoning, INFERENCE),
        contradictions=_contradictions(reasoning),
        alternatives=unique(find_cues(reasoning, ALTERNATIVES)),
        limitations=unique(find_cues(reasoning, LIMITATIONS)),
        conclusion=unique(find_cues(reasoning, CONCLUSION)),
        hedges=find_cues(reasoning, HEDGES),
        chance=find_cues(reasoning, CHANCE),
        assertive=find_cues(reasoning, ASSERTIVE),
        absolutes=unique(find_cues(reasoning, ABSOLUTES)),
        numbers=len(re.findall(r"\d+(?:[.,]\d+)*", reasoning)),
    )
