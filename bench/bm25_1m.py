"""The BM25 leg at a million chunks in one brain: exact top-k from the term postings.

Builds one brain through SqliteChunkIndex.upsert (bench/chunk_index_100k.py's Zipf corpus and
chunks; 4-dimensional random vectors, since only the BM25 leg is timed), then runs the leg in
process (`fts_search.bm25_ranked`, pool 100, no filter) for queries of 2–6 words, each word one
of the 20 most common content words (df ~5–7%) with probability 0.4, else a Zipf draw (mostly
rarer words), and checks every answer against FTS5 ranking every match (ids and scores).
A brain built before the term postings existed is migrated when the index opens.
With --write-overhead N it also builds N chunks twice, with and without the term postings,
and reports the upsert cost per chunk of each.

    .venv/bin/python bench/bm25_1m.py                              # ~8 min build, ~2.8 GB in /tmp
    .venv/bin/python bench/bm25_1m.py --data-dir /tmp/bm25-1m      # keep / reuse the brain
    .venv/bin/python bench/bm25_1m.py --chunks 100000 --write-overhead 100000
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
from cairn.adapters.local import fts_postings
from cairn.adapters.local.fts_query import or_expression, query_terms
from cairn.adapters.local.fts_search import bm25_ranked, ranked_matches
from cairn.adapters.local.sqlite_chunks import DEFAULT_BM25_WEIGHTS, SqliteChunkIndex
from chunk_index_100k import BRAIN, Corpus, build

POOL = 100


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


def write_overhead(chunks: int, seed: int) -> None:
    """Upsert cost per chunk of building `chunks` in batches of 1,000, with the term postings
    and with them switched off (their writer made a no-op)."""
    results: dict[str, float] = {}
    for label in ("without term postings", "with term postings"):
        saved = fts_postings.PostingsWriter.apply
        if label.startswith("without"):
            fts_postings.PostingsWriter.apply = lambda self, conn: None  # type: ignore[method-assign]
        try:
            with tempfile.TemporaryDirectory() as tmp:
                index = SqliteChunkIndex(Path(tmp) / "chunks.db", Path(tmp) / "vectors", 4)
                seconds = build(index, Corpus(np.random.default_rng(seed)), chunks, 4, batch=1000)
                index.close()
                size = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
        finally:
            fts_postings.PostingsWriter.apply = saved  # type: ignore[method-assign]
        results[label] = seconds
        print(
            f"upsert {chunks:,} chunks {label}: {seconds / chunks * 1e6:.0f} µs/chunk, {size / 1e6:.0f} MB",
            flush=True,
        )
    extra = results["with term postings"] - results["without term postings"]
    print(f"term postings add {extra / chunks * 1e6:.0f} µs/chunk", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, default=None, help="keep the brain here (reused if built)")
    parser.add_argument("--write-overhead", type=int, default=0, help="also time N upserts with/without")
    args = parser.parse_args()

    if args.write_overhead:
        write_overhead(args.write_overhead, args.seed)
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
        bm25_ranked(conn, table, batch[0], DEFAULT_BM25_WEIGHTS, None, POOL, rows)  # warm the caches
        new_ms, new = timed(
            lambda terms: bm25_ranked(conn, table, terms, DEFAULT_BM25_WEIGHTS, None, POOL, rows), batch
        )
        print(line("term postings, all queries", new_ms))
        for kind in ("some term in ≤1%", "all common"):
            picked = [ms for ms, c in zip(new_ms, classes, strict=True) if c == kind]
            print(line(f"term postings, {kind}", picked))
        every_ms, everything = timed(
            lambda terms: ranked_matches(
                conn, table, DEFAULT_BM25_WEIGHTS, [f"{table} MATCH ?"], [or_expression(terms)], None, POOL
            ),
            batch,
        )
        print(line("FTS5 ranking every match", every_ms))
        exact = sum(a == b for a, b in zip(new, everything, strict=True))
        print(f"exact (ids and scores equal FTS5 ranking every match): {exact}/{len(batch)} queries")
        conn.close()


if __name__ == "__main__":
    main()
