"""memory_search through MCP at 100,000 or 1,000,000 chunks in one brain, on the HNSW index.

    .venv/bin/python bench/search_1m.py --chunks 1000000 [--data-dir DIR] [--queries 300] \\
        [--locomo locomo-dev.json]

Each step is timed and printed:

1. **build**: document records and chunks straight through the embedded adapters (as
   bench/search_100k.py; embedding a million chunks would take ~1.5 hours), generated text, and
   clustered 384-dim unit vectors: unit(sqrt(.35) topic + sqrt(.40) subtopic + sqrt(.25) noise),
   subtopics of ~20 rows spread over the file, as related chunks sit with a sentence embedder
   (independent random vectors have no neighbours at all, docs/ANN.md). With `--locomo` (the
   LoCoMo dev split, snap-research/locomo), its dialogue turns are added to the same brain as real
   text with the real embedder's vectors: the real-text subset for recall.
2. **index**: `cairn compact` in a subprocess, which builds the HNSW index (wall time).
3. **disk**: the data directory's files by kind.
4. **serve**: `cairn serve` from process start until /healthz answers, until it says every brain
   is searchable (a big brain is compared with its records after listening), and its RSS.
5. **memory_search over MCP** (official MCP client, one call at a time): the first call (it opens
   the index and loads the brain's rows), then `--queries` calls, each question a new one, p50/p95;
   then the first third of them asked again (their vectors kept, adapters/vector_cache.py); RSS
   after.
6. **recall**: the vector leg in-process, the index against exact search on the same files (a
   second SqliteChunkIndex that never uses the index): recall@10 and leg latency for noisy copies
   of stored vectors (cosine 0.6-0.9 to their source), the same under a path filter letting 10 %
   of rows through, and the LoCoMo questions embedded by the real model.
7. with `--real-chars N`: a brain of real text only, in its own data directory: documents found
   on this machine (bench/ingest_throughput.py's folder: this repository's docs, package
   descriptions and docs, the standard library's sources) up to N characters, plus the LoCoMo
   sessions, through `cairn ingest` (real chunking and embeddings); its index is built and the
   LoCoMo questions and noisy copies of its vectors are searched against exact, as in step 6.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.documents.chunk_ids import chunk_id
from chunk_index_100k import Corpus
from search_100k import CHUNKS_PER_DOC, DIM, build, document_of, free_port, measure, serve_ready

SEED = 16


def unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def clustered(rows: int) -> Callable[[int, int], np.ndarray]:
    subtopics, topics = max(1, rows // 20), max(1, rows // 1000)
    rng = np.random.default_rng([SEED, 1])
    topic = unit(rng.standard_normal((topics, DIM), dtype=np.float32))
    sub = unit(rng.standard_normal((subtopics, DIM), dtype=np.float32))
    mixed = np.sqrt(0.35) * topic[np.arange(subtopics) % topics] + np.sqrt(0.40) * sub

    def vectors(first: int, count: int) -> np.ndarray:
        noise = unit(np.random.default_rng([SEED, 2, first]).standard_normal((count, DIM), dtype=np.float32))
        which = (np.arange(first, first + count, dtype=np.int64) * 1_000_003) % subtopics
        return unit(mixed[which] + np.sqrt(0.25) * noise)

    return vectors


def add_locomo(data_dir: Path, brain_id: str, path: Path) -> int:
    """The LoCoMo dev turns as chunks of one document per conversation, real vectors, each document
    with its record (without one, the server's start-up check takes its chunks out of search)."""
    import locomo_data as h
    from cairn.adapters.local.sqlite_records import SqliteRecordStore
    from cairn.bootstrap.models import local_embedder
    from cairn.config import Settings
    from cairn.services.repositories import DocumentRepository

    embedder = local_embedder(Settings(data_dir=data_dir))
    records = SqliteRecordStore(data_dir / "records.sqlite3")
    docs = DocumentRepository(records)
    index = SqliteChunkIndex(
        data_dir / "chunks.sqlite3", data_dir / "vectors", DIM, background_maintenance=False
    )
    when = datetime(2025, 6, 1, tzinfo=UTC)
    count = 0
    for conversation in h.load_conversations(path):
        texts = [f"{turn.speaker}: {turn.text}" for turn in conversation.turns]
        sample = conversation.sample_id
        doc = document_of(
            f"doc_locomo_{sample}", brain_id, f"locomo/{sample}.md", f"LoCoMo {sample}", texts, when
        )
        committed = docs.commit([docs.put_op(doc, 0), docs.pointer_op(doc)])
        chunks = [
            Chunk(
                id=chunk_id(doc.id, i),
                brain_id=brain_id,
                document_id=doc.id,
                path=doc.path,
                ordinal=i,
                text=text,
                title=doc.title,
                created_at=when,
            )
            for i, text in enumerate(texts)
        ]
        for first in range(0, len(chunks), 256):
            part = chunks[first : first + 256]
            index.upsert(part, embedder.embed([c.text for c in part]))
        docs.intents.finish(committed.intents.values())
        count += len(chunks)
    index.close()
    records.close()
    return count


def locomo_questions(path: Path, data_dir: Path) -> np.ndarray:
    import locomo_data as h
    from cairn.bootstrap.models import local_embedder
    from cairn.config import Settings

    questions = [q.question for c in h.load_conversations(path) for q in c.questions]
    return np.asarray(local_embedder(Settings(data_dir=data_dir)).embed(questions), dtype=np.float32)


def rss(pid: int) -> str:
    fields = dict(
        line.split(":", 1)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("Rss")
    )
    total = int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024
    anon = int(fields["RssAnon"].split()[0]) / 1024
    file = int(fields["RssFile"].split()[0]) / 1024
    return f"{total:,.0f} MB (anonymous {anon:,.0f} MB, file pages {file:,.0f} MB)"


def disk(data_dir: Path) -> str:
    kinds: dict[str, int] = {}
    for path in data_dir.rglob("*"):
        if path.is_file():
            kind = {".f32": "vectors", ".faiss": "index"}.get(
                path.suffix, "sqlite" if ".sqlite3" in path.name else "other"
            )
            kinds[kind] = kinds.get(kind, 0) + path.stat().st_size
    total = sum(kinds.values())
    parts = ", ".join(f"{k} {v / 2**20:,.0f} MB" for k, v in sorted(kinds.items()))
    return f"{total / 2**20:,.0f} MB ({parts})"


def vector_leg(
    index: SqliteChunkIndex, brain_id: str, queries: np.ndarray, prefixes: Sequence[str] = ()
) -> tuple[list[list[str]], list[float]]:
    found, timings = [], []
    for q in queries:
        query = ChunkQuery(
            text="",
            vector=q.tolist(),
            bm25_weight=0.0,
            top_k=10,
            filter=ChunkFilter(brain_ids=(brain_id,), path_prefixes=tuple(prefixes)),
        )
        started = time.perf_counter()
        hits = index.search(query)
        timings.append((time.perf_counter() - started) * 1000)
        found.append([hit.chunk.id for hit in hits])
    return found, timings


def recall(data_dir: Path, brain_id: str, chunks: int, real: np.ndarray | None, queries: int) -> None:
    ann = SqliteChunkIndex(
        data_dir / "chunks.sqlite3", data_dir / "vectors", DIM, background_maintenance=False
    )
    exact = SqliteChunkIndex(
        data_dir / "chunks.sqlite3",
        data_dir / "vectors",
        DIM,
        ann_min_rows=10**12,
        background_maintenance=False,
    )
    rng = np.random.default_rng([SEED, 3])

    def noisy(sources: np.ndarray) -> np.ndarray:
        ids = [chunk_id(f"doc_{s // CHUNKS_PER_DOC:07d}", s % CHUNKS_PER_DOC) for s in sources.tolist()]
        stored = exact.get_vectors(brain_id, ids)
        base = unit(np.stack([np.asarray(stored[i], dtype=np.float32) for i in ids]))
        cosines = rng.uniform(0.6, 0.9, size=len(ids)).astype(np.float32)[:, None]
        noise = unit(rng.standard_normal((len(ids), DIM), dtype=np.float32))
        noise = unit(noise - (noise * base).sum(axis=1, keepdims=True) * base)  # orthogonal to the source
        return unit(cosines * base + np.sqrt(1 - cosines**2) * noise)

    anywhere = noisy(rng.choice(chunks, size=queries, replace=False))
    # Documents d with d % 10 == 3 live under area3/ (search_100k.build): sources there, so the
    # filtered queries have neighbours inside the filter, as a scoped question does.
    docs = rng.choice(np.arange(3, chunks // CHUNKS_PER_DOC, 10), size=queries, replace=False)
    inside = noisy(docs * CHUNKS_PER_DOC + rng.integers(0, CHUNKS_PER_DOC, size=queries))
    sets = [
        ("noisy copies of stored vectors", anywhere, ()),
        ("same, sources and filter under area3/ (10 % of rows)", inside, ("area3/",)),
    ]
    if real is not None:
        sets.append(("LoCoMo questions, real embeddings", real, ()))
    for name, vectors, prefixes in sets:
        vector_leg(ann, brain_id, vectors[:5], prefixes)  # opens the index, loads the rows
        vector_leg(exact, brain_id, vectors[:5], prefixes)
        got, ann_ms = vector_leg(ann, brain_id, vectors, prefixes)
        truth, exact_ms = vector_leg(exact, brain_id, vectors, prefixes)
        r = np.mean([len(set(a) & set(t)) / max(1, len(t)) for a, t in zip(got, truth, strict=True)])
        a50, a95 = np.percentile(ann_ms, [50, 95])
        e50, e95 = np.percentile(exact_ms, [50, 95])
        print(
            f"recall@10, {name} ({len(vectors)}): {r:.3f}; vector leg p50/p95 index {a50:.1f}/{a95:.1f} ms, "
            f"exact {e50:.1f}/{e95:.1f} ms",
            flush=True,
        )
    ann.close()
    exact.close()


def real_brain(data_dir: Path, chars: int, locomo: Path | None, queries: int) -> None:
    import locomo_data as h
    from cairn.adapters.local.vector_store import file_name
    from ingest_throughput import build_folder

    folder = data_dir.with_name(data_dir.name + "-files")
    if not data_dir.exists():
        files, copied = build_folder(folder / "docs", chars)
        for conversation in h.load_conversations(locomo) if locomo is not None else []:
            lines = [f"[{t.dia_id}] {t.speaker}: {t.text}" for t in conversation.turns]
            (folder / "locomo").mkdir(parents=True, exist_ok=True)
            (folder / "locomo" / f"{conversation.sample_id}.md").write_text("\n\n".join(lines))
        started = time.perf_counter()
        cairn = Path(sys.executable).with_name("cairn")
        subprocess.run(
            [str(cairn), "ingest", str(folder), "--brain", "real", "--create", "--data-dir", str(data_dir)],
            check=True,
            capture_output=True,
        )
        took = time.perf_counter() - started
        print(f"real-text brain: {files} files, {copied:,} characters ingested in {took:.0f} s", flush=True)
    ann = SqliteChunkIndex(
        data_dir / "chunks.sqlite3",
        data_dir / "vectors",
        DIM,
        ann_min_rows=1_000,
        background_maintenance=False,
    )
    exact = SqliteChunkIndex(
        data_dir / "chunks.sqlite3",
        data_dir / "vectors",
        DIM,
        ann_min_rows=10**12,
        background_maintenance=False,
    )
    (brain_id,) = ann.brain_ids()
    done = ann.compact(brain_id)
    assert done is not None
    print(f"real-text brain: {done.live_rows:,} chunks, index built in {done.seconds:.0f} s", flush=True)
    rows = (data_dir / "vectors" / file_name(brain_id, done.epoch)).stat().st_size // (4 * DIM)
    rng = np.random.default_rng([SEED, 4])
    stored = np.memmap(data_dir / "vectors" / file_name(brain_id, done.epoch), dtype="<f4", mode="r")
    base = unit(np.array(stored.reshape(rows, DIM)[np.sort(rng.choice(rows, size=queries, replace=False))]))
    cosines = rng.uniform(0.6, 0.9, size=queries).astype(np.float32)[:, None]
    noise = unit(rng.standard_normal((queries, DIM), dtype=np.float32))
    noise = unit(noise - (noise * base).sum(axis=1, keepdims=True) * base)
    sets = [
        ("real brain, noisy copies of its vectors", unit(cosines * base + np.sqrt(1 - cosines**2) * noise))
    ]
    if locomo is not None:
        sets.append(("real brain, LoCoMo questions", locomo_questions(locomo, data_dir)))
    for name, vectors in sets:
        vector_leg(ann, brain_id, vectors[:5])
        got, ann_ms = vector_leg(ann, brain_id, vectors)
        truth, exact_ms = vector_leg(exact, brain_id, vectors)
        r = np.mean([len(set(a) & set(t)) / max(1, len(t)) for a, t in zip(got, truth, strict=True)])
        print(
            f"recall@10, {name} ({len(vectors)}): {r:.3f}; vector leg p50/p95 index "
            f"{np.percentile(ann_ms, 50):.1f}/{np.percentile(ann_ms, 95):.1f} ms, exact "
            f"{np.percentile(exact_ms, 50):.1f}/{np.percentile(exact_ms, 95):.1f} ms",
            flush=True,
        )
    ann.close()
    exact.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse a store built before")
    parser.add_argument("--locomo", type=Path, default=None, help="LoCoMo JSON: add its turns as real text")
    parser.add_argument(
        "--real-chars", type=int, default=0, help="also a real-text brain of this many characters"
    )
    parser.add_argument(
        "--untagged", action="store_true", help="build the chunks without tags (by default each has 1-3)"
    )
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-1m-"))
    slug = f"bench-{args.chunks // 1000}k"
    brain_id = f"brn_{slug.replace('-', '')}"
    cairn = Path(sys.executable).with_name("cairn")
    if not (data_dir / "records.sqlite3").exists():
        started = time.perf_counter()
        vectors = clustered(args.chunks)
        build(data_dir, args.chunks, np.random.default_rng(7), vectors, slug, tagged=not args.untagged)
        print(f"build of {args.chunks:,} chunks: {time.perf_counter() - started:.0f} s", flush=True)
        if args.locomo is not None:
            started = time.perf_counter()
            added = add_locomo(data_dir, brain_id, args.locomo)
            print(f"LoCoMo turns added: {added:,} in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    done = subprocess.run(
        [str(cairn), "compact", slug, "--data-dir", str(data_dir)], check=True, capture_output=True, text=True
    )
    print(
        f"index (cairn compact): {time.perf_counter() - started:.0f} s wall; {done.stdout.strip()}",
        flush=True,
    )
    print(f"disk: {disk(data_dir)}", flush=True)

    port = free_port()
    started = time.perf_counter()
    server = subprocess.Popen(
        [str(cairn), "serve", "--port", str(port), "--data-dir", str(data_dir), "--log-level", "warning"]
    )
    try:
        listening, ready = serve_ready(port, started)
        print(
            f"serve: /healthz answered {listening:.2f} s after start, every brain searchable after "
            f"{ready:.2f} s; RSS {rss(server.pid)}"
        )
        corpus = Corpus(np.random.default_rng(11))
        first, *questions = [corpus.question() for _ in range(args.queries + 1)]  # all different
        started = time.perf_counter()
        asyncio.run(measure(f"http://127.0.0.1:{port}/mcp", slug, [first]))
        print(
            f"first memory_search session (index opened, rows loaded): {time.perf_counter() - started:.2f} s"
        )
        timings = asyncio.run(measure(f"http://127.0.0.1:{port}/mcp", slug, questions))
        p50, p95 = np.percentile(timings, [50, 95])
        print(
            f"memory_search over MCP, {args.queries} queries: p50 {p50:.1f} ms  p95 {p95:.1f} ms", flush=True
        )
        again = questions[: args.queries // 3]  # their vectors are kept (adapters/vector_cache.py)
        p50, p95 = np.percentile(asyncio.run(measure(f"http://127.0.0.1:{port}/mcp", slug, again)), [50, 95])
        print(f"the first {len(again)} of them asked again: p50 {p50:.1f} ms  p95 {p95:.1f} ms", flush=True)
        print(f"RSS after {args.queries + len(again) + 4} searches: {rss(server.pid)}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    real = locomo_questions(args.locomo, data_dir) if args.locomo is not None else None
    recall(data_dir, brain_id, args.chunks, real, args.queries)
    if args.real_chars:
        real_brain(data_dir.with_name(data_dir.name + "-real"), args.real_chars, args.locomo, args.queries)
    print(f"load average after: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
