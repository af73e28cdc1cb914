"""Choosing the sentences of an extractive answer: score, deduplicate, order.

A sentence's score is the share of the question's weighted content terms it contains, plus a
prior for the passage it comes from (retrieval already ranked the passages, and that ranking saw
context and vectors a lexical scorer cannot), plus small bonuses when it has the kind of thing
the question asks for (a date for "when", a number for "how many"). Questions are answered by
statements, so interrogative sentences are discounted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.adapters.local.extractive_text import Scorer, sentences, terms
from cairn.ports.generator import Passage

RANK_WEIGHT = 0.25  # prior of the top passage; the passage at rank r gets RANK_WEIGHT / (1 + r)
SCORE_WEIGHT = 0.1  # prior from Passage.score relative to the best passage's
HINT_BONUS = 0.1
QUESTION_DISCOUNT = 0.6
LONG_SENTENCE_TERMS = 40
CONTEXT_WEIGHT = 0.5  # the whole passage's coverage, shared by its sentences
SAME_PASSAGE = 0.5  # a second sentence from a quoted passage competes at this share of its score

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
    score: float


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


def _key(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def select(question: str, passages: Sequence[Passage], k: int, min_relative: float = 0.4) -> list[Pick]:
    """Up to k distinct sentences that answer the question, in answer order; [] if none is relevant."""
    found = [
        (rank, pos, s.text) for rank, p in enumerate(passages) for pos, s in enumerate(sentences(p.text))
    ]
    found_terms = [terms(_LABEL.sub("", text, count=1)) for _, _, text in found]
    scorer = Scorer(question, found_terms)
    context = [scorer.coverage(terms(p.text)) for p in passages]
    priors = _priors(passages)
    hint = _hint(question)
    scored: list[Pick] = []
    for (rank, pos, text), sentence_terms in zip(found, found_terms, strict=True):
        coverage = scorer.coverage(sentence_terms)
        if coverage <= 0:
            continue
        score = coverage + CONTEXT_WEIGHT * context[rank] + priors[rank]
        if hint is not None and hint.search(text):
            score += HINT_BONUS
        if text.rstrip("\"') ").endswith("?"):
            score *= QUESTION_DISCOUNT
        if len(sentence_terms) > LONG_SENTENCE_TERMS:
            score *= LONG_SENTENCE_TERMS / len(sentence_terms)
        scored.append(Pick(passages[rank], rank, pos, text, score))
    return _in_answer_order(_choose(scored, k, min_relative))


def _choose(scored: list[Pick], k: int, min_relative: float) -> list[Pick]:
    """Greedy: the best remaining sentence each time, discounting passages already quoted."""
    chosen: list[Pick] = []
    keys: list[str] = []
    used: set[int] = set()
    remaining = sorted(scored, key=lambda p: (-p.score, p.rank, p.position))
    while remaining and len(chosen) < k:
        best = max(remaining, key=lambda p: _adjusted(p, used))
        remaining.remove(best)
        if chosen and _adjusted(best, used) < min_relative * chosen[0].score:
            break
        key = _key(best.text)
        if any(key in seen for seen in keys):
            continue  # the same sentence again (overlapping chunks) or a fragment of a chosen one
        chosen.append(best)
        keys.append(key)
        used.add(best.rank)
    return chosen


def _adjusted(pick: Pick, used: set[int]) -> float:
    return pick.score * (SAME_PASSAGE if pick.rank in used else 1.0)


def _in_answer_order(chosen: list[Pick]) -> list[Pick]:
    """Passages in the order of their best sentence; a passage's sentences in reading order."""
    lead: dict[int, int] = {}
    for i, pick in enumerate(chosen):
        lead.setdefault(pick.rank, i)
    return sorted(chosen, key=lambda p: (lead[p.rank], p.position))
