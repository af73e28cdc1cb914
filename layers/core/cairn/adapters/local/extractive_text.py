"""Text tools for grounded answers: sentences with their offsets, content terms, a lexical scorer.

Shared by the extractive generator (which picks sentences to quote) and the OpenAI-compatible
one (which finds the passage sentence behind a citation marker). Pure Python, no models.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from cairn.domain.stopwords import EXTRACTIVE as STOPWORDS

MAX_SENTENCE_CHARS = 400

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
# A sentence ends at . ! ? (plus closing quotes/brackets) before whitespace and a likely start.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_HEADING = re.compile(r"\s{0,3}#{1,6}(?:\s|$)")
_FENCE = re.compile(r"\s{0,3}(?:```|~~~)")
_LIST_MARKER = re.compile(r"\s*(?:>\s*|[-*+]\s+|\d{1,3}[.)]\s+)+")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_ABBREVIATIONS_TEXT = """mr mrs ms dr prof sr jr st vs etc inc ltd co corp jan feb mar apr jun jul aug
    sep sept oct nov dec e.g i.e no fig approx dept est"""
_ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())


@dataclass(frozen=True)
class Sentence:
    text: str  # verbatim: text == source[start:end]
    start: int
    end: int


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: enough to meet `painted`/`painting`/`paints` at `paint`."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    if w.isdigit() or len(w) <= 3:
        return w
    for suffix in ("ies", "ied"):
        if w.endswith(suffix) and len(w) > 4:
            return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith(("ss", "eed")):
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # running -> run, planned -> plan
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w  # race/racing/raced -> rac


def terms(text: str) -> list[str]:
    """Content terms: lowercased, stemmed, stopwords dropped."""
    return [stem(w) for w in _WORD.findall(text) if w.lower() not in STOPWORDS]


def sentences(text: str) -> list[Sentence]:
    """Sentences of a passage with their offsets: lines first, then sentence ends within a line.

    Leading markdown (bullets, numbers, quote marks) is trimmed off each sentence; headings and
    YAML front matter are skipped; an overlong sentence is cut at word boundaries.
    """
    out: list[Sentence] = []
    fm = _FRONT_MATTER.match(text)
    offset = fm.end() if fm else 0
    for line in text[offset:].split("\n"):
        if not _HEADING.match(line):  # a heading names a topic; it answers nothing
            _split_line(line, offset, out)
        offset += len(line) + 1
    return out


def without_headings(text: str) -> str:
    """`text` less its markdown heading lines (what `sentences` skips), split at every line break
    (a lone CR, U+2028 too); a `#` line inside a fenced code block is a comment, kept."""
    kept: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or not _HEADING.match(line):
            kept.append(line)
    return "\n".join(kept)


def _split_line(line: str, base: int, out: list[Sentence]) -> None:
    marker = _LIST_MARKER.match(line)
    start = marker.end() if marker else 0
    for m in _BOUNDARY.finditer(line, start):
        last = _last_word(line, start, m.start()).rstrip(".!?\"')]").lower()
        if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
            continue  # "Dr. Smith", "J. K. Rowling"
        _emit(line, base, start, m.start(), out)
        start = m.end()
    _emit(line, base, start, len(line), out)


def _last_word(line: str, start: int, end: int) -> str:
    """The last whitespace-delimited word of `line[start:end]` (its `rsplit(None, 1)[-1]`), read
    backwards from `end`: the slice was copied at each sentence end an abbreviation did not end,
    and 1 MB of `Dr. ` (one line to the fact rules) made 250,000 copies of up to 1 MB, 35 s."""
    while end > start and line[end - 1].isspace():
        end -= 1
    begin = end
    while begin > start and not line[begin - 1].isspace():
        begin -= 1
    return line[begin:end]


def _emit(line: str, base: int, start: int, end: int, out: list[Sentence]) -> None:
    while start < end and line[start].isspace():
        start += 1
    while end > start and line[end - 1].isspace():
        end -= 1
    while end - start > MAX_SENTENCE_CHARS:
        cut = line.rfind(" ", start, start + MAX_SENTENCE_CHARS)
        cut = cut if cut > start else start + MAX_SENTENCE_CHARS
        out.append(Sentence(line[start:cut], base + start, base + cut))
        start = cut
        while start < end and line[start].isspace():
            start += 1
    if end > start and _WORD.search(line, start, end) and line[start:end].strip("-=*_|` ") != "":
        out.append(Sentence(line[start:end], base + start, base + end))


class Scorer:
    """Scores sentences by how much of a question's weighted content they cover.

    A question term's weight is its IDF over the candidate sentences, so a name that appears in
    every candidate counts for less than the rare word that singles out the answer.
    """

    def __init__(self, question: str, candidates: Iterable[Sequence[str]]) -> None:
        self.question = list(dict.fromkeys(terms(question)))
        docs = [set(c) for c in candidates]
        df = Counter(t for d in docs for t in d if t in self.question)
        n = max(len(docs), 1)
        self.weights = {t: math.log(1.0 + (n + 1) / (df[t] + 0.5)) for t in self.question}
        self.total = sum(self.weights.values())

    def coverage(self, sentence_terms: Sequence[str]) -> float:
        """Share of the question's weight present in the sentence, 0..1."""
        if not self.total:
            return 0.0
        present = set(sentence_terms)
        return sum(w for t, w in self.weights.items() if t in present) / self.total


def best_sentence(query: str, text: str) -> str:
    """The sentence of `text` that best covers `query`, else the first 200 characters."""
    found = sentences(text)
    if found:
        scorer = Scorer(query, [terms(s.text) for s in found])
        scored = [(scorer.coverage(terms(s.text)), -i, s.text) for i, s in enumerate(found)]
        best = max(scored)
        if best[0] > 0:
            return best[2]
    return text.strip()[:200]
