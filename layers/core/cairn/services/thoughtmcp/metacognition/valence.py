"""VADER's compound valence of a text of any length, in time linear in its length.

vaderSentiment lower-cases the text's whole word list again for every word it rates (its negation
and idiom checks), so scoring a long text at once takes time quadratic in its words: minutes for a
few hundred KB. A text of at most WINDOW_WORDS words is scored at once, as VADER scores it. A longer
one is cut at its sentence ends into windows of at most WINDOW_WORDS words (a longer sentence into
pieces of that many), and the windows' word sentiments are added up and normalised once, with the
whole text's punctuation emphasis: VADER's compound of the whole text, except where VADER reads
across a window's edge (a negation or degree word just before it, its first "but", which halves
what precedes it and strengthens what follows, and whether some but not all words are capitals).
"""

from __future__ import annotations

from typing import Final

from vaderSentiment.vaderSentiment import normalize

from cairn.services.thoughtmcp.metacognition import lexicons
from cairn.services.thoughtmcp.metacognition.text import sentences

WINDOW_WORDS: Final = 200


def compound(text: str) -> float:
    """VADER's compound score of `text` (-1..1, 4 places), read a window at a time when long."""
    analyser = lexicons.vader()
    if len(text.split()) <= WINDOW_WORDS:
        return float(analyser.polarity_scores(text)["compound"])
    total, scored = 0.0, 0
    for window in windows(text):
        scores = analyser.polarity_scores(window)
        total += scores["sum"]
        scored += int(scores["scored"])
    if not scored:
        return 0.0
    emphasis = analyser._punctuation_emphasis(text)  # counted over the whole text, as VADER does
    total += emphasis if total > 0 else -emphasis if total < 0 else 0.0
    return round(float(normalize(total)), 4)


def windows(text: str) -> list[str]:
    """The text's sentences, joined in order into windows of at most WINDOW_WORDS words."""
    out: list[str] = []
    held: list[str] = []
    for sentence in sentences(text):
        words = sentence.split()
        if len(held) + len(words) > WINDOW_WORDS and held:
            out.append(" ".join(held))
            held = []
        while len(words) > WINDOW_WORDS:
            out.append(" ".join(words[:WINDOW_WORDS]))
            words = words[WINDOW_WORDS:]
        held += words
    if held:
        out.append(" ".join(held))
    return out
