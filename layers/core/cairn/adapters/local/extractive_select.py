"""Choosing the sentences of an extractive answer: one per passage first, then order.

Retrieval already ranked the passages, and that ranking saw what a lexical scorer cannot (vectors,
neighbouring context), so it decides which passages are quoted: the answer leads with the passage
whose best sentence answers best (helped by the passage's own coverage and a prior for its rank),
then quotes the other passages in retrieval order, one sentence each. On LoCoMo dev a passage
that answers often shares no word with the question, and spreading the sentences over passages
cites an answering passage far more often than quoting the lexically best sentences wherever they
are. Only when there are fewer passages than sentences wanted do passages give further sentences,
and only ones that share words with the question.

Within a passage the sentence is chosen by its share of the question's weighted content terms,
some of the share of the sentence before it (an answer often follows the sentence that raises the
topic), a bonus for saying something the question does not (greetings and echoes of the question
answer nothing), a bonus when it has the kind of thing the question asks for (a date for "when",
a number for "how many"), and a small cost per character. Interrogative sentences are discounted.
An answer is given only when some sentence shares a content term with the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.adapters.local.extractive_text import Scorer, sentences, terms
from cairn.ports.generator import Passage

RANK_WEIGHT = 0.25  # lead prior of the top passage; the passage at rank r gets RANK_WEIGHT / (1 + r)
SCORE_WEIGHT = 0.1  # lead prior from Passage.score relative to the best passage's
CONTEXT_WEIGHT = 0.5  # the whole passage's coverage, in choosing the lead passage
FOLLOW_WEIGHT = 0.8  # share of the previous sentence's coverage a sentence inherits
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


def _priors(passages: Sequence[Passage]) -> list[float]:
    best = max((p.score for p in passages), default=0.0)
    return [
        RANK_WEIGHT / (1 + rank) + (SCORE_WEIGHT * max(p.score, 0.0) / best if best > 0 else 0.0)
        for rank, p in enumerate(passages)
    ]


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
            out.append(Pick(passage, rank, pos, text, score, coverages[pos]))
        return sorted(out, key=lambda p: (-p.score, p.position))


def select(question: str, passages: Sequence[Passage], k: int, min_relative: float = 0.4) -> list[Pick]:
    """Up to k distinct sentences that answer the question, in answer order; [] if none is relevant.

    `min_relative` bounds the further sentences of an already quoted passage: each must score at
    least that share of the lead sentence's score.
    """
    texts = [[s.text for s in sentences(p.text)] for p in passages]
    passage_terms = [[terms(_LABEL.sub("", t, count=1)) for t in ts] for ts in texts]
    scoring = _Scoring(question, passage_terms)
    ranked = [scoring.picks(p, rank, texts[rank], passage_terms[rank]) for rank, p in enumerate(passages)]
    if not any(pick.coverage > 0 for picks in ranked for pick in picks):
        return []
    lead = _lead(scoring.scorer, passages, ranked)
    order = [lead] + [rank for rank, picks in enumerate(ranked) if picks and rank != lead]
    chosen = _choose([ranked[rank][0] for rank in order], k, [])
    if len(chosen) < k:
        floor = min_relative * chosen[0].score if chosen else 0.0
        extra = [p for picks in ranked for p in picks[1:] if p.coverage > 0 and p.score >= floor]
        chosen = _choose(sorted(extra, key=lambda p: (-p.score, p.rank, p.position)), k, chosen)
    return _in_answer_order(chosen)


def _lead(scorer: Scorer, passages: Sequence[Passage], ranked: list[list[Pick]]) -> int:
    """The passage whose best sentence, with the passage's coverage and rank, answers best."""
    priors = _priors(passages)
    best = -1
    best_score = float("-inf")
    for rank, picks in enumerate(ranked):
        if not picks:
            continue
        score = picks[0].score + CONTEXT_WEIGHT * scorer.coverage(terms(passages[rank].text)) + priors[rank]
        if _is_question(picks[0].text):
            score *= QUESTION_DISCOUNT  # a question makes a poor first sentence of an answer
        if score > best_score:
            best, best_score = rank, score
    return best


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
