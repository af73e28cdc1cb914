"""How text becomes search words: the rules the full-text legs and boolean queries share.

Words are split the way FTS5's unicode61 tokenizer splits them (runs of letters and digits),
lowercased and stripped of diacritics; `query_terms` also drops the stopwords (the common
179-word English list; adapters/local/fts_query.py says why this list).
"""

from __future__ import annotations

import re
import unicodedata

from cairn.domain.stopwords import SEARCH as STOPWORDS

MAX_TERMS = 32


WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lowercase and strip diacritics (unicode61 `remove_diacritics 2` does the same)."""
    lowered = text.lower()
    if lowered.isascii():  # nothing to decompose: most text, and per character the rest is slow
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Every word of `text`, folded, in order (stopwords kept)."""
    return WORD.findall(fold(text))


def query_terms(text: str) -> list[str]:
    """The distinct non-stopword words of a query, in first-seen order, at most MAX_TERMS."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
            if len(seen) == MAX_TERMS:
                break
    return list(seen)
