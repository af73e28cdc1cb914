"""The BM25 leg: exactly the top `pool` rows by FTS5's bm25(), fast for common terms too.

FTS5 scores a row in ~1.7 µs and ranks every row an expression matches, so a query with a term
in 7% of a million chunks costs ~100 ms or more; capping the rows it ranks loses true top rows.
Instead the leg scores every matching row itself, vectorized, from the term postings kept beside
the FTS5 table (fts_postings.py: per term, each row's title / text / context counts and length,
as FTS5 itself tokenized the row), reading only the query terms' segments:

bm25() is, per row, −Σ over the query's phrases of idf × f(k1+1) / (f + k1(1 − b + b·D/avgdl))
with k1 = 1.2, b = 0.75, f the column-weighted count of the phrase in the row, D the row's
length, avgdl the table's tokens / rows and idf = ln((N − df + 0.5) / (df + 0.5)), at least
1e-6 (FTS5's fts5_aux.c). N and the token total come from FTS5's own averages record, df from
the postings, and each row's score is computed with the same float operations in the same
order (phrase by phrase from 0.0; f summed instance by instance), so it equals bm25()'s bit for
bit and the ranking (ties by rowid) is the one of ranking every match. With a filter, the best
rows are checked against it in growing slices until `pool` of them pass.

`allowed`, when the caller knows it (the brain's cached rows at the query's snapshot,
brain_rows.py), holds every rowid the filter can pass: the postings of other rows are dropped
before scoring (each phrase's df still counts them, so scores are unchanged), and FTS5 is asked
only for the rowid span they cover. A current-only search then neither scores nor reads the
superseded values its words match, nor a type filter the other types' rows.

Query terms that FTS5 makes into other than one token or into a stopword's token, negative
weights, a count or row length too large for the postings, and small tables (at most
SMALL_TABLE rows) are ranked by FTS5 over every match instead.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Callable, Sequence

import numpy as np

from cairn.adapters.local import fts_postings
from cairn.adapters.local.fts_query import or_expression
from cairn.adapters.local.fts_tokens import SATURATED, TOKENS
from cairn.adapters.local.vector_store import Rows

K1 = 1.2
B = 0.75
SMALL_TABLE = 20_000  # at most this many rows: rank every match, it is cheap
_DENSE_SPAN = 1 << 22  # rowid spans below this are scored in one reused dense array (9 B a rowid)
_FIRST_CHECK = 4  # with a filter: first check the best 4 × pool rows, then 4× more each time


def bm25_ranked(
    conn: sqlite3.Connection,
    table: str,
    terms: list[str],
    weights: tuple[float, float, float],
    condition: tuple[str, Sequence[object]] | None,
    pool: int,
    table_rows: int | None = None,
    allowed: Rows | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, BM25 score where higher is better) of the rows matching any term, best
    first (ties by rowid), at most `pool`: exactly the top of ranking every match.

    `condition` is an SQL filter on the chunks table (alias `c`) with its parameters, or None
    when every row of the table may be returned; the top `pool` is taken after filtering.
    `allowed`: the rowids (ascending) of every row `condition` can pass, or None when unknown.
    """
    if not terms or pool <= 0 or (allowed is not None and not len(allowed)):
        return []
    where, params = within([f"{table} MATCH ?"], [or_expression(terms)], table, allowed)
    small = table_rows is not None and table_rows <= SMALL_TABLE
    if small or min(weights) < 0 or not fts_postings.exists(conn, table):
        return ranked_matches(conn, table, weights, where, params, condition, pool)
    tokens = [TOKENS.of_term(term) for term in terms]
    phrases = [t[0] for t in tokens if len(t) == 1]
    if len(phrases) < len(terms) or not fts_postings.skipped(conn, table).isdisjoint(phrases):
        return ranked_matches(conn, table, weights, where, params, condition, pool)
    scored = _scores(conn, table, phrases, weights, allowed)
    if scored is None:
        return ranked_matches(conn, table, weights, where, params, condition, pool)
    rows, scores = scored
    if condition is None:
        rows, scores = _best(rows, scores, pool)
    else:
        rows, scores = _filtered(conn, condition, rows, scores, pool)
    return [(int(r), float(s)) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]


def within(
    where: list[str], params: list[object], table: str, allowed: Rows | None
) -> tuple[list[str], list[object]]:
    """The FTS5 query's conditions, bounded to the rowid span of `allowed` when known (FTS5
    then reads only that span of each term's matches)."""
    if allowed is None or not len(allowed):
        return where, params
    bounds = [f"{table}.rowid >= ?", f"{table}.rowid <= ?"]
    return [*where, *bounds], [*params, int(allowed[0]), int(allowed[-1])]


def _scores(
    conn: sqlite3.Connection,
    table: str,
    phrases: list[str],
    weights: tuple[float, float, float],
    allowed: Rows | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """(rowids ascending, scores) of every row holding a phrase (of `allowed` only, when
    given); None when a saturated count or length makes the postings inexact."""
    rows_total, tokens_total = fts_postings.averages(conn, table)
    if rows_total == 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    avgdl = float(tokens_total) / float(rows_total)
    postings = fts_postings.names(table)[0]
    found: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}  # rowids, f, D, df
    for token in dict.fromkeys(phrases):
        segments = conn.execute(f"SELECT data FROM {postings} WHERE term = ? ORDER BY start", (token,))
        packed = b"".join(data for (data,) in segments)
        # A posting is six little-endian u16: rowid (low, high), c0, c1, c2, length
        fields = np.frombuffer(packed, dtype="<u2").reshape(-1, 6)
        if len(fields) and int(fields[:, 2:].max()) >= SATURATED:
            return None
        rowids = fields[:, 0].astype(np.int64) | (fields[:, 1].astype(np.int64) << 16)
        df = len(rowids)
        if allowed is not None:
            kept = _among(rowids, allowed)
            fields, rowids = fields[kept], rowids[kept]
        freq = _weighted(fields[:, 2], fields[:, 3], fields[:, 4], weights)
        found[token] = (rowids, freq, fields[:, 5], df)
    every = np.concatenate([found[p][0] for p in phrases])
    if not len(every):
        return every, np.empty(0)
    low, high = int(every.min()), int(every.max())
    if high - low >= _DENSE_SPAN:
        rows = np.unique(every)
        score = np.zeros(len(rows))
        _add_phrases(score, phrases, found, lambda rowids: np.searchsorted(rows, rowids), rows_total, avgdl)
        return rows, score
    # Rowids are near-consecutive: score into a reused all-zero array indexed by rowid − low
    # (fresh 8 MB arrays would cost a page fault per 4 KB), zeroed again where touched.
    scratch = _scratch(high - low + 1)
    at = every - low
    try:
        scratch.mark[at] = True
        rows = np.flatnonzero(scratch.mark[: high - low + 1]) + low
        _add_phrases(scratch.score, phrases, found, lambda rowids: rowids - low, rows_total, avgdl)
        return rows, scratch.score[rows - low]
    finally:
        scratch.mark[at] = False
        scratch.score[at] = 0.0


def _among(rowids: np.ndarray, allowed: Rows) -> np.ndarray:
    """Which of `rowids` are in `allowed` (ascending)."""
    at = np.minimum(np.searchsorted(allowed, rowids), len(allowed) - 1)
    return allowed[at] == rowids


def _add_phrases(
    score: np.ndarray,
    phrases: list[str],
    found: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]],
    position: Callable[[np.ndarray], np.ndarray],
    rows_total: int,
    avgdl: float,
) -> None:
    """Add each phrase's contribution to its rows' scores, in bm25()'s order."""
    longest = max(int(found[p][2].max()) for p in phrases if len(found[p][0]))
    # k1(1 − b + b·D/avgdl) per length D, computed as bm25() computes it
    norm = K1 * ((1 - B) + (B * np.arange(longest + 1, dtype=np.float64)) / avgdl)
    for phrase in phrases:  # phrase by phrase, from 0.0
        rowids, freq, length, df = found[phrase]
        if not len(rowids):
            continue
        idf = math.log((rows_total - df + 0.5) / (df + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        at = position(rowids)
        # a row without the phrase would add idf × 0.0, which changes nothing
        score[at] = score[at] + idf * ((freq * (K1 + 1.0)) / (freq + norm[length]))


class _Scratch(threading.local):
    def __init__(self) -> None:
        self.score = np.zeros(0)
        self.mark = np.zeros(0, dtype=bool)


_SCRATCH = _Scratch()


def _scratch(size: int) -> _Scratch:
    if len(_SCRATCH.score) < size:
        _SCRATCH.score = np.zeros(size)
        _SCRATCH.mark = np.zeros(size, dtype=bool)
    return _SCRATCH


def _weighted(
    c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, weights: tuple[float, float, float]
) -> np.ndarray:
    """f per posting as bm25() sums it: 0.0 plus each instance's column weight in turn."""
    if all(_exact_multiple(w) for w in weights):
        return c0 * float(weights[0]) + c1 * float(weights[1]) + c2 * float(weights[2])
    freq = np.zeros(len(c0))
    for column, weight in zip((c0, c1, c2), weights, strict=True):
        for k in range(int(column.max()) if len(column) else 0):
            freq = freq + np.where(k < column, weight, 0.0)
    return freq


def _exact_multiple(weight: float) -> bool:
    """True when any count (< 2^16) times `weight`, and sums of three such, are exact floats (a
    multiple of 2^-10 below 2^10): then c·w equals adding w c times, as bm25() does."""
    scaled = weight * 2**10
    return 0 <= weight < 2**10 and scaled == int(scaled)


def _best(rows: np.ndarray, scores: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `count` (score descending, then rowid), in that order."""
    if len(rows) > count:
        kth = np.partition(scores, len(scores) - count)[len(scores) - count]
        keep = scores >= kth
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:count]
    return rows[order], scores[order]


def _filtered(
    conn: sqlite3.Connection,
    condition: tuple[str, Sequence[object]],
    rows: np.ndarray,
    scores: np.ndarray,
    pool: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The best `pool` rows meeting the filter: check the best m rows, then the best 4m, ...;
    once `pool` of the checked rows pass, no unchecked row (all ranked below) can enter."""
    sql = f"SELECT c.rowid FROM json_each(?) j CROSS JOIN chunks c ON c.rowid = j.value WHERE {condition[0]}"
    checked = 0
    passing: list[int] = []
    size = _FIRST_CHECK * pool
    while True:
        best_rows, _ = _best(rows, scores, size)
        fresh = best_rows[checked:]
        found = conn.execute(sql, [json.dumps(fresh.tolist()), *condition[1]]).fetchall()
        passing += [r[0] for r in found]
        checked = len(best_rows)
        if len(passing) >= pool or checked >= len(rows):
            break
        size *= 4
    keep = np.isin(rows, np.array(passing, dtype=np.int64))
    return _best(rows[keep], scores[keep], pool)


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
