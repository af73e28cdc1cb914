"""How text becomes search words: the rules the full-text legs and boolean queries share.

Words are split the way FTS5's unicode61 tokenizer splits them (runs of letters and digits),
lowercased, and Latin letters stripped of their diacritics, as `remove_diacritics 2` and
OpenSearch's asciifolding strip them; `query_terms` also drops the stopwords (the common 179-word
English list; adapters/local/fts_query.py says why this list).

Only Latin letters lose their marks, and nothing is decomposed: the indexes keep the letters of
other scripts whole, so a query folded further matched nothing. Stripping every script's marks
after a compatibility decomposition made a Korean word its jamo, が か, ё е, ά α and ﬁ fi, none of
which the embedded index holds.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from cairn.domain.stopwords import SEARCH as STOPWORDS

MAX_TERMS = 32


WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lowercase; a Latin letter with diacritics becomes its base letter, and a combining
    diacritic written apart from its letter goes (module docstring)."""
    lowered = text.lower()
    if lowered.isascii():  # nothing to decompose: most text, and per character the rest is slow
        return lowered
    return "".join(_folded(ch) for ch in lowered)


def words(text: str) -> list[str]:
    """Every word of `text`, folded, in order (stopwords kept)."""
    return WORD.findall(fold(text))


_DIACRITICS = frozenset(
    chr(cp)
    for first, last in ((0x300, 0x304), (0x306, 0x30C), (0x323, 0x328), (0x330, 0x331))
    for cp in range(first, last + 1)
) | frozenset("\u030f\u0311\u031b\u032d\u032e")
"""The combining marks unicode61 drops inside a word (grave, acute, circumflex, tilde, macron,
breve, dot, diaeresis, ring, caron, cedilla, ogonek, ...); it splits words at the other marks."""


@functools.lru_cache(maxsize=1 << 16)
def _folded(ch: str) -> str:
    if ch in _DIACRITICS:
        return ""
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if marks and unicodedata.name(base, "").startswith("LATIN") and all(map(unicodedata.combining, marks)):
        return base
    return ch


def query_terms(text: str) -> list[str]:
    """The distinct non-stopword words of a query, in first-seen order, at most MAX_TERMS."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
            if len(seen) == MAX_TERMS:
                break
    return list(seen)
