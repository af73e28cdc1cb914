"""detect_emotion offline: a circumplex reading (valence, arousal, dominance) and discrete emotions.

- valence: VADER's compound score (-1..1), which handles negation ("not happy" is negative),
  degree adverbs, emphatic capitals, "but" and exclamation marks; a long text is read a window
  of sentences at a time (valence.py).
- arousal (0..1): 0.2, plus 0.08 per "!" (at most 0.24), 0.08 per emphasised word in capitals
  that carries sentiment (at most 0.16), 0.05 per intensifying degree adverb from VADER's list (at
  most 0.15), 0.1 per high-activation word (at most 0.3), minus 0.07 per low-activation word (at
  most 0.2), plus a quarter of |valence|: strong feeling either way is activating.
- dominance (-1..1): 0.8 · (P − H) / (P + H + 1) + 0.2 · valence, where P counts control and
  agency words ("decided", "in charge", "I will") and H helplessness words ("trapped", "can't",
  "no choice") and a negated control word ("not in control") counts as helplessness.
- discrete emotions: cue words of the 11 emotions (lexicons.EMOTION_WORDS), skipped when a
  negation stands within the three words before them. Each hit has a strength of 0.2 + 0.15 ·
  |VADER valence of the word| (0.3 when VADER does not rate it), +0.15 after an intensifier, +0.1
  in capitals, +0.1 in a sentence with "!"; an emotion's score is its strongest hit + 0.1 per
  further hit (at most 1), its intensity the band of the score: "high" from 0.66, "moderate" from
  0.33, else "low"; its confidence 0.5 + 0.1 per further distinct word, ±0.15 as the text's
  valence agrees or disagrees with the emotion's sign. Ordered by score, then name. `primary` is
  the first; the block's confidence is the primary's, × 0.8 when the runner-up scores within 0.1
  of it (an ambiguous choice). With no emotion found: primary None, no emotions, confidence 0.
- confidence of the reading: 0.25 + 0.12 per affective cue found (at most 0.9); 0 for empty text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.domain.js_text import js_blank
from cairn.services.thoughtmcp.metacognition import lexicons
from cairn.services.thoughtmcp.metacognition.models import (
    Circumplex,
    DiscreteEmotions,
    EmotionScore,
    Intensity,
)
from cairn.services.thoughtmcp.metacognition.text import WORD, clip, sentences
from cairn.services.thoughtmcp.metacognition.valence import compound

NEGATION_WINDOW = 3
MAX_PHRASE_WORDS = 3
HIGH = 0.66  # intensity bands of a score: high from here, moderate from MODERATE, else low
MODERATE = 0.33
AMBIGUOUS_MARGIN = 0.1


@dataclass
class _Hit:
    emotion: str
    word: str
    strength: float


@dataclass
class _Counts:
    exclamations: int = 0
    caps: int = 0
    boosters: int = 0
    high: int = 0
    low: int = 0
    power: int = 0
    helpless: int = 0
    rated: int = 0  # words VADER rates
    hits: list[_Hit] = field(default_factory=list)

    def cues(self) -> int:
        return self.caps + self.boosters + self.high + self.low + self.power + self.helpless + self.rated


def _negated(tokens: list[str], i: int) -> bool:
    negations = lexicons.vader_negations()
    return any(t in negations or t.endswith("n't") for t in tokens[max(0, i - NEGATION_WINDOW) : i])


def _emotion_of(phrase: str) -> str | None:
    for emotion, cues in lexicons.EMOTION_WORDS.items():
        if phrase in cues:
            return emotion
    return None


def _count(text: str) -> _Counts:
    counts = _Counts(exclamations=text.count("!"))
    boosters = lexicons.vader_boosters()
    for sentence in sentences(text):
        raw = WORD.findall(sentence)
        tokens = [w.lower().replace("’", "'") for w in raw]
        exclaimed = "!" in sentence
        i = 0
        while i < len(tokens):
            # the longest cue phrase starting here (a phrase cue is matched before its first word)
            span, phrase = 1, tokens[i]
            for n in range(MAX_PHRASE_WORDS, 1, -1):
                candidate = " ".join(tokens[i : i + n])
                if i + n <= len(tokens) and (
                    _emotion_of(candidate)
                    or candidate in lexicons.POWER_WORDS
                    or candidate in lexicons.HELPLESS_WORDS
                    or candidate in lexicons.HIGH_AROUSAL
                ):
                    span, phrase = n, candidate
                    break
            negated = _negated(tokens, i)
            capitals = len(raw[i]) >= 3 and raw[i].isupper()
            valence = lexicons.word_valence(phrase)
            if valence is not None:
                counts.rated += 1
            emotional = valence is not None or _emotion_of(phrase) is not None
            if capitals and emotional:
                counts.caps += 1
            if phrase in boosters:
                counts.boosters += 1
            if phrase in lexicons.HIGH_AROUSAL:
                counts.high += 1
            if phrase in lexicons.LOW_AROUSAL:
                counts.low += 1
            if phrase in lexicons.POWER_WORDS:
                if negated:
                    counts.helpless += 1
                else:
                    counts.power += 1
            elif phrase in lexicons.HELPLESS_WORDS and not negated:
                counts.helpless += 1
            emotion = _emotion_of(phrase)
            if emotion is not None and not negated:
                strength = 0.3 if valence is None else 0.2 + 0.15 * abs(valence)
                if any(t in boosters for t in tokens[max(0, i - 2) : i]):
                    strength += 0.15
                if capitals:
                    strength += 0.1
                if exclaimed:
                    strength += 0.1
                counts.hits.append(_Hit(emotion, phrase, clip(strength, 0.0, 0.95)))
            i += span
    return counts


def intensity_of(value: float) -> Intensity:
    """The intensity band of an emotion's score (see the module docstring)."""
    return "high" if value >= HIGH else "moderate" if value >= MODERATE else "low"


def _scores(hits: list[_Hit], valence: float) -> list[EmotionScore]:
    by_emotion: dict[str, list[_Hit]] = {}
    for hit in hits:
        by_emotion.setdefault(hit.emotion, []).append(hit)
    out = []
    for emotion, found in by_emotion.items():
        words = list(dict.fromkeys(h.word for h in found))
        value = round(clip(max(h.strength for h in found) + 0.1 * (len(found) - 1)), 3)
        confidence = 0.5 + 0.1 * (len(words) - 1)
        if emotion in lexicons.POSITIVE_EMOTIONS:
            confidence += 0.15 if valence > 0.05 else -0.15 if valence < -0.05 else 0.0
        elif emotion in lexicons.NEGATIVE_EMOTIONS:
            confidence += 0.15 if valence < -0.05 else -0.15 if valence > 0.05 else 0.0
        out.append(
            EmotionScore(
                emotion=emotion,  # type: ignore[arg-type]  # keys of EMOTION_WORDS are EmotionNames
                score=value,
                intensity=intensity_of(value),
                confidence=round(clip(confidence, 0.1, 0.95), 3),
                evidence=words,
            )
        )
    return sorted(out, key=lambda e: (-e.score, e.emotion))


def classified(emotions: list[EmotionScore]) -> DiscreteEmotions:
    """The discrete block: the top-scoring emotion as primary, and how sure that choice is."""
    if not emotions:
        return DiscreteEmotions(primary=None, emotions=[], confidence=0.0)
    ranked = sorted(emotions, key=lambda e: (-e.score, e.emotion))
    top = ranked[0]
    confidence = top.confidence
    if len(ranked) > 1 and top.score - ranked[1].score < AMBIGUOUS_MARGIN:
        confidence *= 0.8
    return DiscreteEmotions(primary=top.emotion, emotions=ranked, confidence=round(confidence, 3))


def detect(
    text: str, *, include_discrete: bool, timestamp: str
) -> tuple[Circumplex, DiscreteEmotions | None]:
    """The circumplex reading and (when asked) the discrete emotions of `text`."""
    if js_blank(text):
        return Circumplex(valence=0.0, arousal=0.0, dominance=0.0, confidence=0.0, timestamp=timestamp), (
            classified([]) if include_discrete else None
        )
    valence = compound(text)
    c = _count(text)
    arousal = (
        0.2
        + min(0.24, 0.08 * c.exclamations)
        + min(0.16, 0.08 * c.caps)
        + min(0.15, 0.05 * c.boosters)
        + min(0.3, 0.1 * c.high)
        - min(0.2, 0.07 * c.low)
        + 0.25 * abs(valence)
    )
    dominance = 0.8 * (c.power - c.helpless) / (c.power + c.helpless + 1) + 0.2 * valence
    circumplex = Circumplex(
        valence=round(clip(valence, -1.0, 1.0), 3),
        arousal=round(clip(arousal), 3),
        dominance=round(clip(dominance, -1.0, 1.0), 3),
        confidence=round(clip(0.25 + 0.12 * (c.cues() + len(c.hits)), 0.0, 0.9), 3),
        timestamp=timestamp,
    )
    return circumplex, (classified(_scores(c.hits, valence)) if include_discrete else None)
