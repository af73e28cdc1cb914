"""The BM25 leg at a million chunks in one brain: exact top-k against the old posting budget.

Builds one brain through SqliteChunkIndex.upsert (bench/chunk_index_100k.py's Zipf corpus and
chunks; 4-dimensional random vectors, since only the BM25 leg is timed), then runs the leg in
process (`fts_search.bm25_ranked`, pool 100, no filter) for queries of 2–6 words, each word one
of the 20 most common content words (df ~5–7%) with probability 0.4, else a Zipf draw (mostly
rarer words). For comparison it runs the planner the leg used before (a budget of 10,000 matching
rows: drop the most common terms, or rank only the newest 10,000 matches) and counts how often
its top 100 differs from the exact one.

    .venv/bin/python bench/bm25_1m.py                              # ~5 min build, ~2 GB in /tmp
    .venv/bin/python bench/bm25_1m.py --data-dir /tmp/bm25-1m      # keep / reuse the brain
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local.fts_query import or_expression, query_terms
from cairn.adapters.local.fts_search import bm25_ranked, ranked_matches
from cairn.adapters.local.sqlite_chunks import DEFAULT_BM25_WEIGHTS, SqliteChunkIndex
from chunk_index_100k import BRAIN, Corpus, build

POOL = 100
OLD_BUDGET = 10_000


def old_budget_ranked(conn: sqlite3.Connection, table: str, terms: list[str]) -> list[tuple[int, float]]:
    """The leg before exact top-k: above 10,000 matching rows, keep the rarest terms whose matches
    fit the budget, or when every term is common rank only the newest 10,000 matches."""

    def capped(expression: str) -> int:
        sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
        return int(conn.execute(sql, (expression, OLD_BUDGET + 1)).fetchone()[0])

    where: list[str] = [f"{table} MATCH ?"]
    params: list[object] = [or_expression(terms)]
    if capped(or_expression(terms)) > OLD_BUDGET:
        counted = sorted((capped(or_expression([t])), i, t) for i, t in enumerate(terms))
        chosen: list[str] = []
        total = 0
        for count, _index, term in counted:
            if count > OLD_BUDGET or (chosen and total + count > OLD_BUDGET):
                break
            chosen.append(term)
            total += count
        if chosen:
            params = [or_expression(chosen)]
        else:
            edge = conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (or_expression(terms), OLD_BUDGET - 1),
            ).fetchone()
            where.append(f"{table}.rowid >= ?")
            params.append(int(edge[0]))
    return ranked_matches(conn, table, DEFAULT_BM25_WEIGHTS, where, params, None, POOL)


def queries(corpus: Corpus, count: int) -> list[list[str]]:
    rng = corpus.rng
    out: list[list[str]] = []
    while len(out) < count:
        picks: list[int] = []
        for _ in range(int(rng.integers(2, 7))):
            if rng.random() < 0.4:
                picks.append(corpus.first_content + int(rng.integers(0, 20)))
            else:
                picks.append(corpus.first_content + int(corpus._draw(corpus.content_cdf, 1)[0]))
        terms = query_terms(" ".join(corpus.words[picks].tolist()))
        if len(terms) >= 2:
            out.append(terms)
    return out


Ranked = list[tuple[int, float]]


def timed(run: Callable[[list[str]], Ranked], batch: list[list[str]]) -> tuple[list[float], list[Ranked]]:
    ms: list[float] = []
    results: list[Ranked] = []
    for terms in batch:
        started = time.perf_counter()
        results.append(run(terms))
        ms.append((time.perf_counter() - started) * 1000)
    return ms, results


def line(label: str, ms: list[float]) -> str:
    if not ms:
        return f"{label:<34} (no queries)"
    p50, p95 = np.percentile(ms, [50, 95])
    return f"{label:<34} n={len(ms):3d}  p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  max {max(ms):7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, default=None, help="keep the brain here (reused if built)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data = args.data_dir or Path(tmp)
        data.mkdir(parents=True, exist_ok=True)
        corpus = Corpus(np.random.default_rng(args.seed))  # the vocabulary comes first from the seed
        index = SqliteChunkIndex(data / "chunks.db", data / "vectors", 4)
        if index.count(BRAIN) < args.chunks:
            seconds = build(index, corpus, args.chunks, 4, batch=5000)
            print(f"built {args.chunks:,} chunks in {seconds:.0f} s", flush=True)
        index.close()
        size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
        print(f"brain: {args.chunks:,} chunks, {size / 1e9:.2f} GB on disk", flush=True)

        conn = sqlite3.connect(data / "chunks.db")
        seq = schema.brain_state(conn, BRAIN)
        assert seq is not None
        table = schema.fts_table(seq[0])
        batch = queries(corpus, args.queries)
        rows = conn.execute("SELECT count(*) FROM chunks WHERE brain_id = ?", (BRAIN,)).fetchone()[0]
        common = 0.01 * rows  # a term in more than 1% of the chunks counts as common

        def df(term: str) -> int:
            sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
            return int(conn.execute(sql, (or_expression([term]),)).fetchone()[0])

        classes = [
            "all common" if min(df(t) for t in terms) > common else "some term in ≤1%" for terms in batch
        ]
        old_budget_ranked(conn, table, batch[0])  # warm the page cache
        new_ms, new = timed(
            lambda terms: bm25_ranked(conn, table, terms, DEFAULT_BM25_WEIGHTS, None, POOL, rows), batch
        )
        old_ms, old = timed(lambda terms: old_budget_ranked(conn, table, terms), batch)
        print(line("exact top-k, all queries", new_ms))
        for kind in ("some term in ≤1%", "all common"):
            picked = [ms for ms, c in zip(new_ms, classes, strict=True) if c == kind]
            print(line(f"exact top-k, {kind}", picked))
        print(line("old posting budget, all queries", old_ms))
        differs = sum(a != b for a, b in zip(old, new, strict=True))
        ids_differ = sum([r for r, _ in a] != [r for r, _ in b] for a, b in zip(old, new, strict=True))
        print(
            f"old budget's top {POOL} differs from exact: {differs}/{len(batch)} queries (ids: {ids_differ})"
        )
        checked = 0
        for terms, got in list(zip(batch, new, strict=True))[:20]:
            everything = ranked_matches(
                conn, table, DEFAULT_BM25_WEIGHTS, [f"{table} MATCH ?"], [or_expression(terms)], None, POOL
            )
            assert got == everything, terms
            checked += 1
        print(f"exact top-k equals ranking every match on the first {checked} queries")
        conn.close()


if __name__ == "__main__":
    main()
