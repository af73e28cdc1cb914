"""The BM25 leg: the exact top `pool` rows by FTS5's bm25(), without scoring every match.

FTS5 scores every row an expression matches (~1 µs a row), so ranking all rows of a query with a
common term costs ~100 ms at a million chunks. Exact top-k (max-score pruning at the level of
term sets) instead:

- Per term t, its document frequency df (one `count(*)` of its matches) and an upper bound of its
  contribution. FTS5 computes, per phrase, idf × f·(k1+1) / (f + k1·(1 − b + b·D/avgdl)) with
  k1 = 1.2, b = 0.75, f the column-weighted count of its instances in the row and D the row's
  length; idf = ln((N − df + 0.5) / (df + 0.5)), at least 1e-6. The denominator's second part is
  at least k1·(1 − b) > 0, so f / (f + …) < 1 for any f ≥ 0 whatever the column weights: the
  contribution is strictly below ub(t) = idf × (k1 + 1). (Weights scale f, not the bound.)
- A row holding the set S of query terms scores below Σ ub(S). For a threshold θ, the rows that
  can reach θ are those holding some minimal term set with Σ ub ≥ θ: an FTS5 expression
  `(a AND b) OR (a AND c) OR …` finds them (rowids only, the filter applied) and FTS5 walks it by
  seeking in posting lists, cheap even when a term is common.
- Those candidates are scored exactly by bm25() of the plain OR of all terms, restricted to them,
  so scores equal what ranking every match gives. If `pool` candidates score at least θ, every
  other row scores below them: the answer is exact. Otherwise θ is lowered (to the pool-th best
  exact score once known, else to reach ~8× more estimated candidates) and the round repeated;
  when θ would reach the smallest bound every match is a candidate and all matches are ranked.

θ starts where the estimated candidates (df / N independent per term) are ~2 × pool. Queries
whose terms are all common still rank every match (the bounds cannot prune them).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence

from cairn.adapters.local.fts_query import or_expression

K1 = 1.2
B = 0.75
SMALL_TABLE = 20_000  # at most this many rows: rank every match, it is cheap
_SLACK = 1 + 1e-9  # bounds are compared with float sums taken in another order
_MAX_SETS = 256  # more minimal term sets than this: rank every match instead


def bm25_ranked(
    conn: sqlite3.Connection,
    table: str,
    terms: list[str],
    weights: tuple[float, float, float],
    condition: tuple[str, Sequence[object]] | None,
    pool: int,
    table_rows: int | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, BM25 score where higher is better) of the rows matching any term, best
    first (ties by rowid), at most `pool`: exactly the top of ranking every match.

    `condition` is an SQL filter on the chunks table (alias `c`) with its parameters, or None
    when every row of the table may be returned; the top `pool` is taken after filtering.
    """
    everything = or_expression(terms)
    if len(terms) < 2 or (table_rows is not None and table_rows <= SMALL_TABLE):
        return ranked_matches(conn, table, weights, [f"{table} MATCH ?"], [everything], condition, pool)
    rows = row_count(conn, table)
    df = [_count(conn, table, or_expression([t])) for t in terms]
    bounds = [upper_bound(rows, d) for d in df]
    scored: dict[int, float] = {}
    target = 2.0 * pool
    known: float | None = None  # the pool-th best exact score found so far
    while True:
        theta = _threshold(bounds, df, rows, target)
        if known is not None:
            theta = known if theta is None else max(theta, known)
        sets = None if theta is None or theta <= min(bounds) else minimal_sets(bounds, theta)
        if theta is None or sets is None:
            return ranked_matches(conn, table, weights, [f"{table} MATCH ?"], [everything], condition, pool)
        expression = " OR ".join("(" + " AND ".join(f'"{terms[i]}"' for i in s) + ")" for s in sets)
        fresh = [r for r in _matching(conn, table, expression, condition) if r not in scored]
        scored.update(_scores(conn, table, weights, everything, fresh))
        top = sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))[:pool]
        if len(top) == pool and top[-1][1] >= theta:
            return top
        known = top[-1][1] if len(top) == pool else None
        target *= 8


def upper_bound(rows: int, df: int) -> float:
    """A bound (strict, with slack for rounding) of one phrase's bm25() contribution."""
    idf = math.log((rows - df + 0.5) / (df + 0.5))
    return (idf if idf > 0 else 1e-6) * (K1 + 1.0) * _SLACK


def minimal_sets(bounds: list[float], theta: float) -> list[list[int]] | None:
    """The minimal sets of term indexes whose bounds sum to at least θ; None when too many.

    Terms are added in descending bound order and a set stops growing as soon as it reaches θ,
    so removing its last (smallest) term, and so any term, drops it below θ."""
    order = sorted(range(len(bounds)), key=lambda i: -bounds[i])
    rest = [0.0] * (len(order) + 1)
    for k in range(len(order) - 1, -1, -1):
        rest[k] = rest[k + 1] + bounds[order[k]]
    found: list[list[int]] = []

    def walk(start: int, chosen: list[int], total: float) -> bool:
        for k in range(start, len(order)):
            if total + rest[k] < theta:
                return True
            reached = total + bounds[order[k]]
            if reached >= theta:
                found.append([*chosen, order[k]])
                if len(found) > _MAX_SETS:
                    return False
            elif not walk(k + 1, [*chosen, order[k]], reached):
                return False
        return True

    return found if walk(0, [], 0.0) else None


def _threshold(bounds: list[float], df: list[int], rows: int, target: float) -> float | None:
    """The largest θ (to 1e-3 of the bound sum) whose estimated candidates reach `target`; None
    when even the smallest bound's θ falls short (every match will have to be ranked)."""
    p = [min(1.0, d / max(rows, 1)) for d in df]

    def estimate(theta: float) -> float:
        sets = minimal_sets(bounds, theta)
        if sets is None:
            return math.inf
        return sum(rows * math.prod(p[i] for i in s) for s in sets)

    low, high = min(bounds), sum(bounds)
    if estimate(low) < target:
        return None
    for _ in range(20):
        middle = (low + high) / 2
        if estimate(middle) >= target:
            low = middle
        else:
            high = middle
    return low


def row_count(conn: sqlite3.Connection, table: str) -> int:
    """The table's row count as bm25() reads it: the first varint of FTS5's averages record."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None:
        return 0
    value = 0
    for index, byte in enumerate(bytes(row[0])[:9]):
        if index == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def _count(conn: sqlite3.Connection, table: str, expression: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (expression,)).fetchone()
    return int(row[0])


def _matching(
    conn: sqlite3.Connection, table: str, expression: str, condition: tuple[str, Sequence[object]] | None
) -> list[int]:
    if condition is None:
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
        return [r for (r,) in conn.execute(sql, (expression,))]
    sql = (
        f"SELECT {table}.rowid FROM {table} CROSS JOIN chunks c ON c.rowid = {table}.rowid "
        f"WHERE {table} MATCH ? AND {condition[0]}"
    )
    return [r for (r,) in conn.execute(sql, [expression, *condition[1]])]


def _scores(
    conn: sqlite3.Connection,
    table: str,
    weights: tuple[float, float, float],
    expression: str,
    rowids: list[int],
) -> list[tuple[int, float]]:
    """Exact bm25() of `expression` for these rows. One statement, so FTS5 computes each
    phrase's IDF once (`rowid IN (...)` as a constraint would rerun it per row: seconds); the
    unary `+` keeps the set a filter on the rows FTS5 walks between the smallest and largest."""
    if not rowids:
        return []
    bm25 = f"bm25({table}, {', '.join(repr(float(w)) for w in weights)})"
    rows = conn.execute(
        f"SELECT rowid, {bm25} FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ? "
        "AND +rowid IN (SELECT value FROM json_each(?))",
        (expression, min(rowids), max(rowids), json.dumps(rowids)),
    ).fetchall()
    return [(int(rowid), -float(score)) for rowid, score in rows]


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
