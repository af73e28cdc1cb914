"""How text becomes search words: the rules the full-text legs and boolean queries share.

Words are split the way FTS5's unicode61 tokenizer splits them (runs of letters and digits),
lowercased and stripped of diacritics; `query_terms` also drops the stopwords (the common
179-word English list; adapters/local/fts_query.py says why this list).
"""

from __future__ import annotations

import re
import unicodedata

MAX_TERMS = 32

_STOPWORD_TEXT = """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
    couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma
    mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
    weren't won won't wouldn wouldn't
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lowercase and strip diacritics (unicode61 `remove_diacritics 2` does the same)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
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
