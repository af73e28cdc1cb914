"""Choosing the sentences of an extractive answer: only the ones that answer the question.

Every sentence of the retrieved passages gets a relevance to the question. With an embedder
(what the server wires) it is the sentence's cosine to the question plus a little of its share
of the question's weighted content terms (an exact name or code the model blurs); without one it
is the lexical score below.

With an embedder the choice goes passage by passage (`_by_passage`). A passage answers when one of
its sentences reaches `min_similarity` (the embedding model's calibrated midpoint, 0.40 for MiniLM:
docs/RELEVANCE.md), or when retrieval judged the passage itself a good match (its calibrated score
at least GOOD_PASSAGE: a short conversational turn often says less in its sentence than its
speaker and date let retrieval see). A passage is as strong as its retrieval score plus its best
sentence's relevance; the answering passages within PASSAGE_RELATIVE of the strongest each give
their best sentence, and their other sentences that reach the floor and come within
`min_relative` of it. With the first MAX_EMBEDDED sentences (the best passages') as candidates.
When no passage answers, nothing is quoted, and the generator says so. Without an embedder a
sentence is quoted when it answers (it shares a content term with the question or replies to a
sentence asking what the question asks) and comes within `min_relative` of the best sentence.

Measured (docs/PERFORMANCE.md): on notes that each hold one answering sentence among unrelated
ones, asked in other words (tests/integration/ask/test_ask_relevance.py), every answer quotes
the answering sentence alone and questions the notes never answer are told so; on LoCoMo dev,
single-hop answers cite an evidence turn 0.660 of the time with 3.7 sentences, where quoting the
best sentence alone gave 0.435 and padding every answer with one sentence of each passage 0.735.

The lexical score of a sentence is its share of the question's weighted content terms, some of
the share of the sentence before it (an answer often follows the sentence that raises the topic),
a bonus for saying something the question does not (greetings and echoes of the question answer
nothing), a bonus when it has the kind of thing the question asks for (a date for "when", a
number for "how many"), and a small cost per character. Interrogative sentences are discounted,
with either measure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cairn.adapters.local.extractive_text import Scorer, sentences, terms
from cairn.ports.generator import Passage

Similarity = Callable[[str, Sequence[str]], Sequence[float]]
"""The question's cosine to each of the sentences (an embedder's, through the generator)."""

MIN_RELATIVE = 0.8  # a quoted sentence's relevance is at least this share of the best one's
MIN_SIMILARITY = 0.40  # the embedded MiniLM model's calibrated midpoint (services/search/relevance.py)
TERMS_WEIGHT = 0.2  # of the lexical coverage, added to a sentence's cosine
PASSAGE_WEIGHT = 1.0  # of a passage's retrieval score, added to its best sentence's similarity
PASSAGE_RELATIVE = 0.7  # a quoted passage's strength is at least this share of the strongest's
GOOD_PASSAGE = 0.5  # a retrieval score (calibrated relevance) at which a passage likely answers
MAX_EMBEDDED = 200  # sentences embedded per answer, the best passages' first (MiniLM: ~0.2 s)
FOLLOW_WEIGHT = 0.8  # share of the previous sentence's coverage a sentence inherits (lexical)
NEW_TERMS_BONUS = 0.1  # for content terms the question lacks, full at NEW_TERMS_FULL of them
NEW_TERMS_FULL = 5
LENGTH_COST = 0.05  # per 100 characters
HINT_BONUS = 0.1
QUESTION_DISCOUNT = 0.6
LONG_SENTENCE_TERMS = 40

_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE = re.compile(
    rf"\b(?:\d{{4}}|\d{{1,2}}[/-]\d{{1,2}}|(?:{_MONTHS})[a-z]*|{_DAYS}|yesterday|today|tomorrow|tonight"
    r"|ago|last (?:week|month|year|night)|next (?:week|month|year))\b",
    re.I,
)
_NUMBER = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|"
    r"thousand|dozen|several|few)\b",
    re.I,
)
_NAME = re.compile(r"(?<=[a-z,;]\s)[A-Z][a-z]+")  # a capitalised word inside a sentence
# A transcript line's speaker label: "Alice: ", "1:56 pm on 8 May, 2023 — Bob: "
_LABEL = re.compile(r"^(?:[^:!?\n]|:(?=\S)){1,80}:\s+(?=\S)")
_PLACE = re.compile(r"\b(?:in|at|to|from|near)\s+(?:the\s+)?[A-Z][a-z]+")


@dataclass(frozen=True)
class Pick:
    passage: Passage
    rank: int  # the passage's position in the input
    position: int  # the sentence's index within its passage
    text: str
    score: float  # how well the sentence answers, comparable within a question
    coverage: float  # its share of the question's weighted terms
    answers: bool = False  # it answers at all (shares a term, or reaches the similarity floor)


def _hint(question: str) -> re.Pattern[str] | None:
    q = question.lower()
    if re.search(r"\bhow (?:many|much|long|old|often|far)\b", q):
        return _NUMBER
    if re.search(r"\b(?:when|what (?:date|day|year|month|time))\b", q):
        return _DATE
    if re.search(r"\bwho(?:m|se)?\b", q):
        return _NAME
    if re.search(r"\bwhere\b", q):
        return _PLACE
    return None


def _is_question(text: str) -> bool:
    return text.rstrip("\"') ").endswith("?")


def _key(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


class _Scoring:
    """The question's scorer and hint, shared by every sentence of every passage."""

    def __init__(self, question: str, passage_terms: list[list[list[str]]]) -> None:
        self.scorer = Scorer(question, [t for sentence_terms in passage_terms for t in sentence_terms])
        self.question_terms = set(self.scorer.question)
        self.hint = _hint(question)

    def picks(
        self, passage: Passage, rank: int, texts: list[str], found_terms: list[list[str]]
    ) -> list[Pick]:
        """Every sentence of the passage with its lexical score and whether it answers at all."""
        coverages = [self.scorer.coverage(t) for t in found_terms]
        out = []
        for pos, (text, sentence_terms) in enumerate(zip(texts, found_terms, strict=True)):
            score = coverages[pos] + (FOLLOW_WEIGHT * coverages[pos - 1] if pos else 0.0)
            new_terms = len(set(sentence_terms) - self.question_terms)
            score += NEW_TERMS_BONUS * min(new_terms, NEW_TERMS_FULL) / NEW_TERMS_FULL
            score -= LENGTH_COST * len(text) / 100
            if self.hint is not None and self.hint.search(text):
                score += HINT_BONUS
            if _is_question(text):
                score *= QUESTION_DISCOUNT
            if len(sentence_terms) > LONG_SENTENCE_TERMS:
                score *= LONG_SENTENCE_TERMS / len(sentence_terms)
            # it shares a term, or it is the reply to a question sentence that does
            answers = coverages[pos] > 0 or (
                pos > 0 and coverages[pos - 1] > 0 and _is_question(texts[pos - 1])
            )
            out.append(Pick(passage, rank, pos, text, score, coverages[pos], answers))
        return out


def _by_similarity(picks: list[Pick], cosines: Sequence[float], floor: float) -> list[Pick]:
    """The picks rescored by their cosine to the question (plus a little of their coverage)."""
    out = []
    for pick, cosine in zip(picks, cosines, strict=True):
        score = float(cosine) + TERMS_WEIGHT * pick.coverage
        if _is_question(pick.text):
            score *= QUESTION_DISCOUNT
        out.append(
            Pick(pick.passage, pick.rank, pick.position, pick.text, score, pick.coverage, score >= floor)
        )
    return out


def select(
    question: str,
    passages: Sequence[Passage],
    k: int,
    min_relative: float = MIN_RELATIVE,
    *,
    similarity: Similarity | None = None,
    min_similarity: float = MIN_SIMILARITY,
) -> list[Pick]:
    """Up to k distinct sentences that answer the question, in answer order; [] if none does.

    A sentence is quoted when it answers (see the module) and scores at least `min_relative` of
    the best answering sentence; `similarity` (the question's cosine to each sentence) replaces
    the lexical score when given.
    """
    texts = [[s.text for s in sentences(p.text)] for p in passages]
    bare = [[_LABEL.sub("", t, count=1) for t in ts] for ts in texts]
    passage_terms = [[terms(t) for t in ts] for ts in bare]
    scoring = _Scoring(question, passage_terms)
    picks = [
        pick
        for rank, p in enumerate(passages)
        for pick in scoring.picks(p, rank, texts[rank], passage_terms[rank])
    ]
    if similarity is not None and picks:
        picks = picks[:MAX_EMBEDDED]  # in retrieval order: the best passages' sentences first
        texts_of = {(p.rank, p.position): bare[p.rank][p.position] for p in picks}
        cosines = similarity(question, [texts_of[(p.rank, p.position)] for p in picks])
        return _by_passage(_by_similarity(picks, cosines, min_similarity), k, min_relative)
    answering = [p for p in picks if p.answers]
    if not answering:
        return []
    best = max(p.score for p in answering)
    floor = min_relative * best if best > 0 else best
    ranked = sorted((p for p in answering if p.score >= floor), key=lambda p: (-p.score, p.rank, p.position))
    return _in_answer_order(_choose(ranked, k, []))


def _by_passage(picks: list[Pick], k: int, min_relative: float) -> list[Pick]:
    """With similarities, passage by passage: a passage answers when one of its sentences reaches
    the similarity floor, or when retrieval itself judged it a good match (its score at least
    GOOD_PASSAGE). Its strength is its retrieval score (PASSAGE_WEIGHT of it) plus its best
    sentence's; the answering passages within PASSAGE_RELATIVE of the strongest each give their
    best sentence, and those of their other sentences that reach the floor and `min_relative` of it."""
    by_rank: dict[int, list[Pick]] = {}
    for pick in picks:
        by_rank.setdefault(pick.rank, []).append(pick)
    strengths = {
        rank: PASSAGE_WEIGHT * own[0].passage.score + max(p.score for p in own)
        for rank, own in by_rank.items()
        if any(p.answers for p in own) or own[0].passage.score >= GOOD_PASSAGE
    }
    if not strengths:
        return []
    strongest = max(strengths.values())
    ranked: list[Pick] = []
    for rank, strength in sorted(strengths.items(), key=lambda kv: (-kv[1], kv[0])):
        if strength < PASSAGE_RELATIVE * strongest:
            break
        own = sorted(by_rank[rank], key=lambda p: (-p.score, p.position))
        ranked += [own[0], *(p for p in own[1:] if p.answers and p.score >= min_relative * own[0].score)]
    return _in_answer_order(_choose(ranked, k, []))


def _choose(candidates: list[Pick], k: int, chosen: list[Pick]) -> list[Pick]:
    """`chosen` plus the candidates in order, skipping repeats, up to k sentences."""
    out = list(chosen)
    keys = [_key(p.text) for p in out]
    for pick in candidates:
        if len(out) >= k:
            break
        key = _key(pick.text)
        if any(key in seen for seen in keys):
            continue  # the same sentence again (overlapping chunks) or a fragment of a chosen one
        out.append(pick)
        keys.append(key)
    return out


def _in_answer_order(chosen: list[Pick]) -> list[Pick]:
    """Passages in the order of their first quoted sentence; a passage's sentences in reading order."""
    lead: dict[int, int] = {}
    for i, pick in enumerate(chosen):
        lead.setdefault(pick.rank, i)
    return sorted(chosen, key=lambda p: (lead[p.rank], p.position))
