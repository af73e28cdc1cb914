"""A hit's highlights: the sentences of its chunk that hold the query's words, so an agent sees at a
glance why the chunk matched without reading all of it."""

from __future__ import annotations

import re
from typing import Final

from cairn.domain.words import query_terms, words

MAX_HIGHLIGHTS: Final = 3
MAX_CHARS: Final = 240
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+|\n+")


def highlights(query: str, text: str) -> list[str]:
    """Up to three sentences of `text` holding the most distinct query words (stopwords aside), in
    the text's order, each at most 240 characters; none when no sentence holds one (a match by
    meaning alone)."""
    terms = set(query_terms(query))
    if not terms:
        return []
    scored: list[tuple[int, int, str]] = []
    for position, sentence in enumerate(s.strip() for s in _SENTENCE.split(text)):
        shared = len(terms.intersection(words(sentence)))
        if shared:
            scored.append((shared, position, sentence))
    best = sorted(scored, key=lambda s: (-s[0], s[1]))[:MAX_HIGHLIGHTS]
    return [_clip(sentence) for _, _, sentence in sorted(best, key=lambda s: s[1])]


def _clip(sentence: str) -> str:
    flat = " ".join(sentence.split())
    return flat if len(flat) <= MAX_CHARS else flat[: MAX_CHARS - 1].rstrip() + "…"
