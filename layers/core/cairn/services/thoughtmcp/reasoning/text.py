"""Plain-text reading for the offline reasoning rules: sentences, clauses, terms, quantities, cues.

Everything here is a regular expression or a word list: no model, no randomness, so the same
text always reads the same way.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import groupby, islice
from typing import Final

from cairn.domain.stopwords import REASONING as STOPWORDS


def wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# leading verbs dropped from key phrases: "optimize database performance" is about "database performance"
ACTION_VERBS: Final = wordset(
    """optimize optimise improve build design write reduce increase migrate create fix add remove deploy
    implement develop find decide choose plan test launch prioritize approach handle manage scale support
    run set keep move update upgrade refactor debug investigate understand learn explain evaluate analyze
    buy adopt hire
    analyse measure define identify prevent avoid ensure speed lower raise cut grow hire train ship release
    integrate automate secure monitor review prepare organize organise start stop replace choose pick
    select compare assess determine resolve solve address"""
)

DETERMINERS: Final = wordset("the a an its their our my your this that these those his her each every")

HEDGES: Final = (
    "maybe",
    "might",
    "probably",
    "possibly",
    "perhaps",
    "seems",
    "seem",
    "likely",
    "i think",
    "we think",
    "i believe",
    "we believe",
    "assume",
    "assuming",
    "presumably",
    "should be fine",
    "hopefully",
    "roughly",
    "guess",
)
ABSOLUTES: Final = (
    "always",
    "never",
    "everyone",
    "nobody",
    "all users",
    "every user",
    "guaranteed",
    "certainly",
    "obviously",
    "clearly",
    "definitely",
    "impossible",
    "no way",
)
EVIDENCE_CUES: Final = (
    "because",
    "since",
    "measured",
    "benchmark",
    "data shows",
    "shows",
    "according to",
    "logs",
    "metrics",
    "observed",
    "survey",
    "study",
)

# a number with its unit: a known unit after a space or hyphen, any other word only when joined to
# the number ("6-month", "10k"), so "Postgres 14 with" is 14, not "14 with"
_QUANTITY = re.compile(
    r"(?<![\w.])(?:[<>≤≥~]=?\s*)?[$€£]?\d[\d,]*(?:\.\d+)?(?:[\s-]?(?:%|x\b|ms\b|s\b|sec\w*|min\w*|hours?\b|"
    r"days?\b|weeks?\b|months?\b|years?\b|k\b|m\b|gb\b|mb\b|tb\b|users?\b|records?\b|requests?\b|rps\b|"
    r"qps\b|people\b|engineers?\b|customers?\b)|-?[a-z]+\b)?",
    re.I,
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9+#'’-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return [w.lower().strip("'’-") for w in _WORD.findall(text)]


def word_starts(text: str) -> tuple[list[int], list[str]]:
    """Where each of `words(text)` starts in `text`, and the words."""
    found = list(_WORD.finditer(text))
    return [m.start() for m in found], [m.group(0).lower().strip("'’-") for m in found]


def content_words(text: str) -> list[str]:
    """Words that carry meaning (not stopwords, not one or two letters), in order, repeated."""
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 2 and not w.isdigit()]


def term_set(text: str) -> set[str]:
    return {_stem(w) for w in content_words(text)}


def overlap(a: str, b: str) -> float:
    """Share of the smaller text's terms the other holds (0..1)."""
    return shared(term_set(a), term_set(b))


def shared(ta: set[str], tb: set[str]) -> float:
    """`overlap` of two term sets already taken, for a text compared with many."""
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


class TermIndex:
    """Which of some texts' term sets share a term with another, found through the terms rather
    than by comparing it with each."""

    def __init__(self, term_sets: Sequence[set[str]]) -> None:
        self._using: dict[str, list[int]] = {}
        for i, terms in enumerate(term_sets):
            for term in terms:
                self._using.setdefault(term, []).append(i)

    def sharing(self, terms: set[str], limit: int) -> list[int]:
        """The first `limit` positions, in order, of the term sets sharing a term with `terms`."""
        found = heapq.merge(*(self._using[t] for t in terms if t in self._using))
        return [i for i, _ in islice(groupby(found), limit)]


def key_phrases(text: str, limit: int = 5) -> list[str]:
    """Runs of up to four consecutive content words (no stopword or punctuation between them, a
    leading action verb dropped), the most frequent first, then the earliest."""
    runs: list[str] = []
    for fragment in re.split(r"[^\w\s'’+#-]|\n", text):
        run: list[str] = []
        for token in _WORD.findall(fragment):
            low = token.lower()
            if low in STOPWORDS or len(low) < 3 or low.isdigit() or (not run and low in ACTION_VERBS):
                if run:
                    runs.append(" ".join(run))
                run = []
                continue
            run.append(low)
            if len(run) == 4:
                runs.append(" ".join(run))
                run = []
        if run:
            runs.append(" ".join(run))
    counts = Counter(runs)
    first = {r: i for i, r in reversed(list(enumerate(runs)))}
    ranked = sorted(counts, key=lambda r: (-counts[r], first[r]))
    out: list[str] = []
    for phrase in ranked:
        if any(phrase in kept for kept in out):
            continue
        out.append(phrase)
        if len(out) == limit:
            break
    return out


def sentences(text: str) -> list[str]:
    """Sentences and list items, trimmed, in order."""
    out: list[str] = []
    for line in re.split(r"\n+", text):
        line = _BULLET.sub("", line).strip()
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def quantities(text: str) -> list[str]:
    """Numbers with their units or comparison signs ("<100ms", "1M records", "6-month")."""
    found: list[str] = []
    for m in _QUANTITY.finditer(text):
        value = m.group(0).strip()
        if value and value not in found and not re.fullmatch(r"[12]\d{3}", value):
            found.append(value)
    return found


def cues(text: str, vocabulary: Iterable[str]) -> list[str]:
    """The vocabulary entries the text uses as whole words, in vocabulary order."""
    low = " " + " ".join(words(text)) + " "
    return [cue for cue in vocabulary if f" {cue} " in low]


def sentence_with(text: str, cue: str) -> str:
    """The first sentence of `text` holding `cue` as whole words (or the text's first sentence)."""
    for sentence in sentences(text):
        if f" {cue} " in " " + " ".join(words(sentence)) + " ":
            return sentence
    found = sentences(text)
    return found[0] if found else text


def clean(piece: str) -> str:
    """A clause without the connectors and punctuation around it, its first letter capitalised."""
    piece = piece.strip().strip(",;:").strip()
    piece = re.sub(
        r"^(?:and then|and|then|also|next|finally|afterwards|after that|first(?:ly)?|second(?:ly)?|"
        r"third(?:ly)?|lastly|to begin(?: with)?|start by|begin by|but|or)\b[,\s]*",
        "",
        piece,
        flags=re.I,
    )
    piece = piece.strip().rstrip(".!?;:,").strip()
    # tried only where a run of commas and spaces starts: tried inside one too, it read the run again
    piece = re.sub(r"(?:(?<![,\s])[,\s]+(?:which|who)|,\s*that)$", "", piece, flags=re.I)
    return piece[:1].upper() + piece[1:] if piece else piece


def shorten(text: str, limit: int = 80) -> str:
    """At most `limit` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def lower_first(text: str) -> str:
    """`text` with its first letter lower-cased, unless it starts an acronym or a name like API."""
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def unique(items: Sequence[str]) -> tuple[str, ...]:
    """The non-empty items, each once whatever its case, in first-seen order."""
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        if item and item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return tuple(out)


def and_list(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def quoted_list(items: Sequence[str]) -> str:
    return and_list([f"'{item}'" for item in items])


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
