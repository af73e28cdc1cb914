"""The BM25 leg: plan which query terms to match, then rank with FTS5's bm25().

FTS5 scores every row that matches (~5 µs a row here) and scans each term's whole posting
list for its IDF, so a term found in 20,000 chunks of a brain costs ~100 ms a query while
adding little to the ranking (the more common a term, the lower its IDF). Above a budget of
matching rows the plan drops the most common terms, keeping the rarest ones whose postings
fit the budget; when every term is common it ranks only the newest `budget` matches. Below
the budget the query is left untouched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.adapters.local.fts_query import or_expression

DEFAULT_POSTING_BUDGET = 10_000


@dataclass(frozen=True)
class TermPlan:
    terms: list[str]
    min_rowid: int | None = None  # rank only rows at or above this rowid


def _capped_count(conn: sqlite3.Connection, table: str, expression: str, cap: int) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)", (expression, cap + 1)
    ).fetchone()
    return int(row[0])


def plan_terms(conn: sqlite3.Connection, table: str, terms: list[str], budget: int) -> TermPlan:
    if _capped_count(conn, table, or_expression(terms), budget) <= budget:
        return TermPlan(terms)
    counted = sorted(
        (_capped_count(conn, table, or_expression([t]), budget), i, t) for i, t in enumerate(terms)
    )
    chosen: list[str] = []
    total = 0
    for count, _index, term in counted:
        if count > budget or (chosen and total + count > budget):
            break
        chosen.append(term)
        total += count
    if chosen:
        return TermPlan(chosen)
    edge = conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (or_expression(terms), budget - 1),
    ).fetchone()
    return TermPlan(terms, None if edge is None else int(edge[0]))


def bm25_ranked(
    conn: sqlite3.Connection,
    table: str,
    terms: list[str],
    weights: tuple[float, float, float],
    condition: tuple[str, Sequence[object]] | None,
    pool: int,
    budget: int = DEFAULT_POSTING_BUDGET,
    table_rows: int | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, BM25 score where higher is better), best first, at most `pool`.

    `condition` is an SQL filter on the chunks table (alias `c`) with its parameters, or None
    when every row of the table may be returned. A table of at most `budget` rows needs no plan.
    """
    small = table_rows is not None and table_rows <= budget
    plan = TermPlan(terms) if small else plan_terms(conn, table, terms, budget)
    where = [f"{table} MATCH ?"]
    params: list[object] = [or_expression(plan.terms)]
    if plan.min_rowid is not None:
        where.append(f"{table}.rowid >= ?")
        params.append(plan.min_rowid)
    return ranked_matches(conn, table, weights, where, params, condition, pool)


def ranked_matches(
    conn: sqlite3.Connection,
    table: str,
    weights: tuple[float, float, float],
    where: list[str],
    params: list[object],
    condition: tuple[str, Sequence[object]] | None,
    pool: int,
) -> list[tuple[int, float]]:
    """(rowid, BM25 score where higher is better) of the rows `where` matches, best first, at
    most `pool`, each also meeting `condition` (a filter on the chunk row)."""
    bm25 = f"bm25({table}, {', '.join(repr(float(w)) for w in weights)})"
    source = table
    if condition is not None:
        # CROSS JOIN keeps FTS5 as the outer loop: the MATCH drives, the filter checks each match.
        source = f"{table} CROSS JOIN chunks c ON c.rowid = {table}.rowid"
        where = [*where, condition[0]]
        params = [*params, *condition[1]]
    rows = conn.execute(
        f"SELECT {table}.rowid, {bm25} AS score FROM {source} WHERE {' AND '.join(where)} "
        f"ORDER BY score, {table}.rowid LIMIT ?",
        [*params, pool],
    ).fetchall()
    return [(int(rowid), -float(score)) for rowid, score in rows]
