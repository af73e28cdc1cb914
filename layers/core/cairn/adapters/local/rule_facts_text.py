"""Sentence-level text tools for the rule-based extractor: cleanup, chit-chat tests, names.

A sentence loses only what carries no fact: leading interjections ("Wow,", "Yeah,"), a vocative
naming the listener ("Thanks, Mel!"), trailing emoji; its ending becomes a full stop.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from cairn.adapters.local.extractive_text import STOPWORDS, sentences, without_headings
from cairn.adapters.local.rule_facts_dates import MONTH_NAMES
from cairn.adapters.local.rule_facts_lexicon import ADVERBS, FILLER, INTERJECTIONS, NOT_NAMES, PAST_FORMS

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "`": "'"})
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_LEAD = re.compile(r"^\s*([A-Za-z']+)(\s+[A-Z][a-z]+)?\s*[,!.:;\-–—]+\s*")
_CAPS = re.compile(r"\b[A-ZÀ-ÖØ-Þ][\w&'\-]*\w(?:\s+(?:of\s+|the\s+|de\s+)?[A-ZÀ-ÖØ-Þ][\w&'\-]*\w)*")
_YOU_KNOW = re.compile(
    r"^(?:you know|don't worry|by the way|btw|oh btw|guess what|fun fact)\b[\s,!.:;\-–—]*", re.I
)
_DROP_AT_END = frozenset(" \t\n.!?…~,;:*-–—")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")


def normalise(text: str) -> str:
    return " ".join(text.translate(_QUOTES).split())


def split(text: str) -> list[str]:
    return [s.text for s in sentences(text)]


def said(message: str) -> list[str]:
    """The sentences of one message, its lines folded together (a sentence may wrap) once its
    heading lines are gone: folded in, a leading `# Notes` would hide the whole message."""
    return split(normalise(without_headings(message)))


def is_question(sentence: str) -> bool:
    return sentence.rstrip(" \"')]").endswith("?")


@functools.lru_cache(maxsize=8)
def lowered(names: frozenset[str]) -> frozenset[str]:
    """The names in lower case: a call lowers its conversation's vocatives once, not per sentence."""
    return frozenset(n.lower() for n in names)


@functools.lru_cache(maxsize=8)
def _later_vocative(names: frozenset[str]) -> re.Pattern[str] | None:
    """`, Name` before punctuation or the end, for every name at once (longest first): a pattern
    per name per sentence, past re's cache of 512, compiled 1,000,000 times for 1,000 speakers."""
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
    return re.compile(rf",\s+(?:{alternatives})(?=\s*[!.?,]|\s*$)", re.I)


def strip_lead(sentence: str, vocatives: Iterable[str]) -> str:
    """`sentence` without opening interjections or a vocative ("Yeah, Caroline, I went" -> "I went")."""
    names = lowered(frozenset(vocatives))
    original = sentence
    while True:
        sentence = _YOU_KNOW.sub("", sentence).lstrip(" ,;:-–—")
        m = _LEAD.match(sentence)
        if not m:
            break
        head, name = m.group(1).lower(), (m.group(2) or "").strip().lower()
        if (head in INTERJECTIONS and (not name or name in names)) or (head in names and not name):
            sentence = sentence[m.end() :]
            continue
        break
    later = _later_vocative(names)  # a vocative later on: "..., Mel!" / ", Caroline."
    if later is not None and "," in sentence:
        sentence = later.sub("", sentence)
    if sentence == original:
        return sentence
    return sentence[:1].upper() + sentence[1:]


def finish(sentence: str) -> str:
    """The sentence ending in exactly one full stop (trailing emoji and "!!!" dropped)."""
    end = len(sentence)
    while end and (sentence[end - 1] in _DROP_AT_END or not _kept_at_end(sentence[end - 1])):
        end -= 1
    return sentence[:end] + "." if end else ""


def _kept_at_end(char: str) -> bool:
    return char.isalnum() or char in "\"')]}%$#°+"


def words(sentence: str) -> list[str]:
    return _WORD.findall(sentence)


def substance(sentence: str, ignore: Iterable[str] = (), skip: frozenset[str] = frozenset()) -> list[str]:
    """Content words: not stopwords, not chit-chat, not the names of the people talking (`ignore`,
    or `skip` when already lower case)."""
    ignored = {n.lower() for n in ignore}
    out = []
    for w in words(sentence):
        low = w.lower()
        if low in STOPWORDS or low in FILLER or low in ignored or low in skip or len(low) < 2:
            continue
        out.append(low)
    return out


def past_tense_after_we(sentence: str) -> bool:
    """ "we roasted marshmallows", "we just did it": something the speaker's group did."""
    found = [w.lower() for w in words(sentence)]
    for i, w in enumerate(found):
        if w == "we":
            j = i + 1
            while j < len(found) and found[j] in ADVERBS:
                j += 1
            if j < len(found) and (found[j] in PAST_FORMS or found[j].endswith("ed")):
                return True
    return False


def has_number(sentence: str) -> bool:
    return bool(_NUMBER.search(sentence))


def capitalised_elsewhere(texts: Iterable[str]) -> set[str]:
    """Words written with a capital where no sentence starts: evidence that they are names."""
    seen: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for sentence in split(text):
            found = words(sentence)
            lower.update(w for w in found if w.islower())
            seen.update(w for w in found[1:] if w[0].isupper() and w.lower() not in NOT_NAMES)
    return {w for w in seen if w.lower() not in lower}


def names_in(sentence: str, known: set[str]) -> list[str]:
    """Capitalised names in `sentence`; its first word counts only if it is known as a name."""
    out: list[str] = []
    for m in _CAPS.finditer(sentence):
        parts = m.group(0).split()
        first = parts[0]
        while parts and _bad(parts[-1]):
            parts = parts[:-1]
        while parts and _bad(parts[0]):
            parts = parts[1:]
        opening = m.start() == 0 or sentence[: m.start()].rstrip().endswith(('"', ":"))
        if opening and parts and parts[0] is first and len(parts) == 1 and first not in known:
            continue
        name = " ".join(parts)
        name = name[:-2] if name.endswith("'s") else name
        if name and name not in out:
            out.append(name)
    return out


def _bad(word: str) -> bool:
    low = word.lower()
    base = low[:-2] if low.endswith("'s") else low
    return (
        base in NOT_NAMES
        or base in STOPWORDS
        or word in MONTH_NAMES
        or (low.startswith("i'") and len(low) <= 4)
        or not word[0].isupper()
    )
