"""Query text → an FTS5 MATCH expression that can never be a syntax error.

Words are split the way FTS5's unicode61 tokenizer splits them (runs of letters and digits),
lowercased, stopwords dropped, and the rest OR-ed, each one quoted: FTS5 operators typed by a
user (`AND`, `NOT`, `*`, `:`, `-`, `"`, parentheses) are therefore only ever plain words or
separators. The FTS5 tokenizer still stems quoted terms (porter), so `running` finds `runs`.

The word rules live in domain/words.py, which boolean queries share. The stopword list is the
common 179-word English list. It drops question words too: on the LoCoMo dev split (BM25 leg
alone, through SqliteChunkIndex) recall@10 was 0.647 with it, 0.604 with a 22-word list that
keeps `what`/`when`/`did` and 0.606 with no list at all.
"""

from __future__ import annotations

from cairn.domain.words import MAX_TERMS, STOPWORDS, query_terms, words

__all__ = ["MAX_TERMS", "STOPWORDS", "match_expression", "or_expression", "query_terms", "words"]


def or_expression(terms: list[str]) -> str:
    """`"a" OR "b"`; each term is a run of letters and digits, so quoting is enough."""
    return " OR ".join(f'"{term}"' for term in terms)


def match_expression(text: str) -> str | None:
    """The MATCH expression for a query's terms; None when nothing is left to match."""
    terms = query_terms(text)
    return or_expression(terms) if terms else None
