"""Sentences, words and cue matching shared by the offline engines."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")


def cues(words: str, *phrases: str) -> frozenset[str]:
    """A cue list: space-separated single words, then phrases of several words."""
    return frozenset(words.split()) | frozenset(phrases)


def sentences(text: str) -> list[str]:
    """The text's sentences in order: split after . ! ? followed by white space, and at line breaks."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def words(text: str) -> list[str]:
    """Lower-case words, apostrophes kept ("can't"), curly apostrophes made straight."""
    return [w.lower().replace("’", "'") for w in WORD.findall(text)]


@cache
def cue_pattern(cues: frozenset[str]) -> re.Pattern[str]:
    """One case-insensitive regex matching any of the cue words or phrases as whole words."""
    alternatives = sorted((re.escape(c).replace(r"\ ", r"\s+") for c in cues), key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.I)


def find_cues(text: str, cues: frozenset[str]) -> list[str]:
    """The cues the text holds, lower-cased, in order of appearance (repeats kept)."""
    return [" ".join(m.group(0).lower().split()) for m in cue_pattern(cues).finditer(text)]


def unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))


def clip(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def score(value: float) -> float:
    """A score as reported: clamped to 0..1 and rounded to 3 places."""
    return round(clip(value), 3)
