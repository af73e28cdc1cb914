"""Search latency of the embedded ChunkIndex (SQLite FTS5 + exact vectors) at 100k chunks.

Builds one brain of synthetic chunks straight through SqliteChunkIndex in a temporary
directory, then times hybrid searches (text + vector, top_k 10, candidate_pool 100) without a
filter, with path-prefix and tag filters, each leg alone, a search right after each 1-chunk
upsert, and BM25 queries of very common words.

Text: one Zipf law (s=1.05) over 30,000 synthetic words whose top ranks are the English
stopwords (so they are ~half the tokens, as in prose); chunks are 10–250 words (median ~110).
Queries are 2–6 Zipf-drawn content words wrapped in a question ("what did … ?"). Vectors are
random unit vectors: exact search costs the same whatever the values.

    .venv/bin/python bench/chunk_index_100k.py                 # 100k chunks, 300 searches
    .venv/bin/python bench/chunk_index_100k.py --chunks 1500   # the small-brain target
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from cairn.adapters.local.fts_query import STOPWORDS
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkQuery

BRAIN = "brn_bench"
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
TAGS = [f"tag{i}" for i in range(50)]


class Corpus:
    """One Zipf law over every word: the top ranks are stopwords, the rest synthetic words."""

    def __init__(self, rng: np.random.Generator, vocabulary: int = 30_000) -> None:
        self.rng = rng
        stop = sorted(w for w in STOPWORDS if "'" not in w)
        words: dict[str, None] = dict.fromkeys(stop)
        while len(words) < len(stop) + vocabulary:
            parts = rng.choice(len(SYLLABLES), size=int(rng.integers(2, 5)))
            words["".join(SYLLABLES[p] for p in parts)] = None
        self.words = np.array(list(words))
        weights = 1.0 / np.arange(1, len(self.words) + 1) ** 1.05
        self.cdf = np.cumsum(weights) / weights.sum()
        self.first_content = len(stop)
        content = np.cumsum(weights[len(stop) :])
        self.content_cdf = content / content[-1]

    def _draw(self, cdf: np.ndarray, count: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, self.rng.random(count)), len(cdf) - 1)

    def text(self, count: int) -> str:
        return " ".join(self.words[self._draw(self.cdf, count)].tolist())

    def common_question(self) -> str:
        """Two of the 20 most frequent content words plus one drawn as usual."""
        picks = self.rng.choice(20, size=2, replace=False) + self.first_content
        extra = self._draw(self.content_cdf, 1) + self.first_content
        return f"what about {' '.join(self.words[np.concatenate([picks, extra])].tolist())}?"

    def question(self) -> str:
        count = int(self.rng.integers(2, 7))
        picks = self._draw(self.content_cdf, count) + self.first_content
        return f"what did {' '.join(self.words[picks].tolist())} do?"


def unit_vectors(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def build(index: SqliteChunkIndex, corpus: Corpus, chunks: int, dim: int, batch: int = 1000) -> float:
    rng = corpus.rng
    start_time = datetime(2025, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    for first in range(0, chunks, batch):
        rows = []
        for n in range(first, min(first + batch, chunks)):
            doc = n // 5
            rows.append(
                Chunk(
                    id=f"chk_{n:07d}",
                    brain_id=BRAIN,
                    document_id=f"doc_{doc:06d}",
                    path=f"area{doc % 10}/topic{doc % 97}/note-{doc}.md",
                    ordinal=n % 5,
                    text=corpus.text(int(np.clip(rng.lognormal(4.7, 0.6), 10, 250))),
                    title=corpus.text(4),
                    tags=[
                        TAGS[t] for t in rng.choice(len(TAGS), size=int(rng.integers(1, 4)), replace=False)
                    ],
                    created_at=start_time + timedelta(minutes=n),
                )
            )
        index.upsert(rows, unit_vectors(rng, len(rows), dim))
    return time.perf_counter() - started


def timed(label: str, queries: list[ChunkQuery], run: Callable[[ChunkQuery], object]) -> None:
    run(queries[0])  # warm the caches this shape of query uses
    ms = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        ms.append((time.perf_counter() - started) * 1000)
    p50, p95 = np.percentile(ms, [50, 95])
    print(f"{label:<32} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   max {max(ms):7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    corpus = Corpus(rng)
    with tempfile.TemporaryDirectory() as tmp:
        index = SqliteChunkIndex(Path(tmp) / "chunks.db", Path(tmp) / "vectors", args.dim)
        seconds = build(index, corpus, args.chunks, args.dim)
        print(
            f"built {index.count(BRAIN):,} chunks in {seconds:.1f} s ({args.chunks / seconds:,.0f} chunks/s)"
        )

        texts = [corpus.question() for _ in range(args.queries)]
        vectors = unit_vectors(rng, args.queries, args.dim)
        plain = ChunkFilter((BRAIN,))
        filters = {
            "": plain,
            " + path prefix (10%)": ChunkFilter((BRAIN,), path_prefixes=("area3/",)),
            " + 2 path prefixes (1%)": ChunkFilter(
                (BRAIN,), path_prefixes=("area3/topic5/", "area4/topic7/")
            ),
            " + tag (~4%)": ChunkFilter((BRAIN,), tags=("tag7",)),
        }
        for suffix, chunk_filter in filters.items():
            queries = [
                ChunkQuery(text=t, vector=v.tolist(), filter=chunk_filter, top_k=10, candidate_pool=100)
                for t, v in zip(texts, vectors, strict=True)
            ]
            timed(f"hybrid{suffix}", queries, index.search)
            if not suffix:
                bm25_only = [ChunkQuery(text=q.text, vector=None, filter=plain) for q in queries]
                vector_only = [ChunkQuery(text="", vector=q.vector, filter=plain) for q in queries]
                timed("bm25 only", bm25_only, index.search)
                timed("vector only", vector_only, index.search)
        writes = iter(range(args.chunks, args.chunks + len(texts)))

        def write_then_search(query: ChunkQuery) -> None:
            n = next(writes)
            index.upsert(
                [Chunk(id=f"chk_{n:07d}", brain_id=BRAIN, document_id=f"new_{n}", path=f"new/{n}.md",
                       ordinal=0, text=corpus.text(100), created_at=datetime.now(UTC))],
                unit_vectors(rng, 1, args.dim),
            )  # fmt: skip
            index.search(query)

        mixed = [
            ChunkQuery(text=t, vector=v.tolist(), filter=plain) for t, v in zip(texts, vectors, strict=True)
        ]
        timed("1-chunk upsert, then hybrid", mixed[:100], write_then_search)
        common = [ChunkQuery(text=corpus.common_question(), vector=None, filter=plain) for _ in range(50)]
        timed("bm25, 2 common words", common, index.search)
        index.close()


if __name__ == "__main__":
    main()
