"""Concepts a text names, by offline rules: what the concept graph links chunks through.

- **Proper-noun phrases**: runs of capitalised words (with `of`, `the`, `de`, `von`, `&` inside,
  never at either end), one to five words, honorifics and leading sentence openers dropped
  (`Mr. Darcy` and `Then Darcy` are `Darcy`). A single capitalised word that opens a sentence is a
  name only when the text also capitalises it mid-sentence.
- **Acronyms and codes**: two to eight capitals or digits with at least two capitals (`EBITDA`,
  `GDPR`, `ISO-9001`).
- **The entity rules' finds** (entity_rules.py: technologies and the like, with their aliases).

Keys compare case-insensitively with whitespace collapsed (`concept_key`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cairn.services.memory.entities import EntityExtractor

MAX_CONCEPTS: Final = 200  # per document
MAX_WORDS: Final = 5
_JOINERS: Final = frozenset({"of", "the", "de", "du", "von", "van", "der", "la", "le", "&"})
_HONORIFICS: Final = frozenset({"mr", "mrs", "ms", "miss", "dr", "sir", "lady", "lord", "st", "prof", "capt"})
_OPENERS: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "he",
        "she",
        "they",
        "we",
        "i",
        "you",
        "his",
        "her",
        "their",
        "our",
        "my",
        "your",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "with",
        "without",
        "into",
        "onto",
        "of",
        "to",
        "as",
        "and",
        "but",
        "or",
        "nor",
        "so",
        "yet",
        "if",
        "when",
        "while",
        "after",
        "before",
        "since",
        "until",
        "because",
        "although",
        "though",
        "however",
        "therefore",
        "thus",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "why",
        "how",
        "all",
        "any",
        "each",
        "every",
        "some",
        "no",
        "not",
        "one",
        "two",
        "three",
        "also",
        "yes",
        "oh",
        "well",
        "now",
        "today",
        "yesterday",
        "tomorrow",
        "chapter",
        "part",
        "section",
        "figure",
        "table",
    ]
)
_LEADING: Final = _OPENERS | _HONORIFICS  # dropped from a phrase's start
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*|&")
_CAPITAL = re.compile(r"[A-Z][a-z'’\-]+|[A-Z]{2,}[a-z]*|[A-Z]")
_ACRONYM = re.compile(r"(?<![\w-])(?=(?:[A-Z0-9-]*[A-Z]){2})[A-Z][A-Z0-9]{1,7}(?:-[A-Z0-9]{1,6})?(?![\w-])")
_AFTER_HONORIFIC = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Prof|Capt)\.\s+$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*(?:[-*+#>]+\s*)?)[\"'“‘(\[]*$")


@dataclass(frozen=True)
class ConceptMention:
    name: str
    aliases: tuple[str, ...] = ()


def concept_key(name: str) -> str:
    return " ".join(name.casefold().split()).strip(" .,;:!?'\"()[]")


class ConceptRules:
    """The rules above, plus an entity extractor's mentions when one is given."""

    def __init__(self, entities: EntityExtractor | None = None) -> None:
        self.entities = entities

    def extract(self, text: str) -> list[ConceptMention]:
        found: dict[str, ConceptMention] = {}
        if self.entities is not None:
            for mention in self.entities.extract(text):
                found.setdefault(concept_key(mention.name), ConceptMention(mention.name, mention.aliases))
        for name in _proper_phrases(text):
            found.setdefault(concept_key(name), ConceptMention(name))
        for match in _ACRONYM.finditer(text):
            found.setdefault(concept_key(match[0]), ConceptMention(match[0]))
        found.pop("", None)
        return list(found.values())[:MAX_CONCEPTS]


def _proper_phrases(text: str) -> list[str]:
    runs = _capitalised_runs(text)
    inside = {run[0][0].casefold() for run in runs if not _opens_sentence(text, run[0][1])}
    phrases: list[str] = []
    for run in runs:
        opener = _opens_sentence(text, run[0][1])
        words = [w for w, _ in run]
        # The first word kept is found before the run is cut once: cut a word at a time, a run of
        # 66,000 `Mr` (200 KB) was copied 66,000 times (13 s).
        first = _skipped(words, 0, _LEADING)
        opener = opener and first == 0
        words = words[_skipped(words, first, _JOINERS) :]
        if not words or len(words) > MAX_WORDS:
            continue
        word = words[0].casefold()
        if len(words) == 1 and (len(word) < 2 or (opener and word not in inside)):
            continue
        phrases.append(" ".join(words))
    return phrases


def _skipped(words: list[str], start: int, skip: frozenset[str]) -> int:
    """The index of the first of `words` from `start` on that is not in `skip` (case aside)."""
    while start < len(words) and words[start].casefold() in skip:
        start += 1
    return start


def _opens_sentence(text: str, start: int) -> bool:
    before = text[max(0, start - 8) : start]
    if _AFTER_HONORIFIC.search(before):
        return False
    return start == 0 or _SENTENCE_START.search(before) is not None


def _capitalised_runs(text: str) -> list[list[tuple[str, int]]]:
    """Runs of capitalised words (joiners inside), each word with its offset."""
    runs: list[list[tuple[str, int]]] = []
    run: list[tuple[str, int]] = []

    def close() -> None:
        while run and run[-1][0].casefold() in _JOINERS:
            run.pop()
        if run:
            runs.append(list(run))
        run.clear()

    for match in _WORD.finditer(text):
        word, start = match[0], match.start()
        gap = text[run[-1][1] + len(run[-1][0]) : start] if run else ""
        if run and (len(gap) > 2 or any(ch in gap for ch in '.!?;:,\n()"')):
            close()
        if (_CAPITAL.fullmatch(word) and word.casefold() not in ("i",)) or (
            run and word.casefold() in _JOINERS
        ):
            run.append((word, start))
        elif run:
            close()
    close()
    return runs
