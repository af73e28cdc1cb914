"""The BM25 leg of a boolean query (domain/boolean_query.py) on a brain's FTS5 table.

The query tree becomes an FTS5 expression in which every term and phrase is a quoted string
(a quote inside one doubled), so no user text is ever FTS5 syntax; a prefix is its quoted stem
followed by `*` (FTS5's prefix query, over the stemmed tokens the index holds). FTS5's NOT is binary (`a NOT
b`: rows matching a but not b), so a group `x AND y AND NOT u AND NOT v` is written
`("x" AND "y") NOT ("u" OR "v")`; the parser only lets NOT stand inside a group with at least
one operand that is not negated, so every query it accepts has this form.

Ranking is FTS5's bm25() of the boolean expression itself, with the plain leg's column weights,
in the same pass as the match: a phrase counts as a phrase, and a NOT operand adds nothing (no
matching row holds it). (Ranking by an OR of the positive words instead needed the expression as
a subquery, which SQLite re-evaluates per row: seconds on 20,000 rows.) The posting budget of the
plain leg is not applied: dropping a common term there would drop rows the expression must keep.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cairn.adapters.local.fts_query import query_terms
from cairn.adapters.local.fts_search import ranked_matches, within
from cairn.adapters.local.vector_store import Rows
from cairn.domain.boolean_query import (
    And,
    BoolQuery,
    Not,
    Or,
    Phrase,
    Prefix,
    Term,
    check,
    positive_prefixes,
    positive_terms,
)
from cairn.ports.chunks import ChunkQuery


def leg_terms(query: ChunkQuery) -> list[str]:
    """The BM25 leg's terms (none when its weight is zero): a boolean query's positive terms and
    its prefixes' stems (so a query of prefixes alone has a leg), the query checked first, else
    the words of the query text."""
    if query.boolean is not None:
        check(query.boolean)
    if query.bm25_weight <= 0:
        return []
    if query.boolean is None:
        return query_terms(query.text)
    terms = positive_terms(query.boolean)
    return terms + [stem for stem in positive_prefixes(query.boolean) if stem not in terms]


def fts5_expression(query: BoolQuery) -> str:
    """The FTS5 MATCH expression of a (checked) query tree."""
    check(query)
    return _expression(query)


def _expression(node: BoolQuery) -> str:
    if isinstance(node, Term):
        return _quoted(node.word)
    if isinstance(node, Phrase):
        return _quoted(" ".join(node.words))
    if isinstance(node, Prefix):
        return _quoted(node.stem) + "*"
    if isinstance(node, Or):
        return "(" + " OR ".join(map(_expression, node.items)) + ")"
    if isinstance(node, And):
        kept = [_expression(item) for item in node.items if not isinstance(item, Not)]
        dropped = [_expression(item.item) for item in node.items if isinstance(item, Not)]
        expression = "(" + " AND ".join(kept) + ")"
        return f"({expression} NOT ({' OR '.join(dropped)}))" if dropped else expression
    raise AssertionError("check() leaves NOT only inside an AND")


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def boolean_ranked(
    conn: sqlite3.Connection,
    table: str,
    query: BoolQuery,
    weights: tuple[float, float, float],
    condition: tuple[str, Sequence[object]] | None,
    pool: int,
    allowed: Rows | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, BM25 score where higher is better) of the rows matching the query, best
    first, at most `pool`; `condition` and `allowed` as in fts_search.bm25_ranked."""
    if allowed is not None and not len(allowed):
        return []
    where, params = within([f"{table} MATCH ?"], [fts5_expression(query)], table, allowed)
    return ranked_matches(conn, table, weights, where, params, condition, pool)
