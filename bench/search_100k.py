"""memory_search latency through MCP against `cairn serve` with 100,000 chunks in one brain.

Builds the brain straight through the embedded adapters (document records + chunks with random
unit vectors: search cost does not depend on vector values, and embedding 100k chunks would take
~20 minutes), starts `cairn serve` on it, then times memory_search calls one at a time with the
official MCP client, client-side (wall time around each call_tool, as the LoCoMo recall harness
measures memory_search):

    python bench/search_100k.py [--chunks 100000] [--queries 300] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.domain.models import Brain, Chunk, Document
from cairn.services.documents.chunk_ids import chunk_id
from cairn.services.repositories import BrainRepository, DocumentRepository
from chunk_index_100k import Corpus, unit_vectors

CHUNKS_PER_DOC = 5
DIM = 384


def document_of(
    doc_id: str,
    brain_id: str,
    path: str,
    title: str,
    texts: list[str],
    when: datetime,
    tags: list[str] | None = None,
) -> Document:
    """The record of a document whose chunks are `texts`, as a write would make it (its content
    file is not written: nothing here reads it)."""
    body = "\n\n".join(texts).encode()
    digest = hashlib.sha256(body).hexdigest()
    return Document(
        id=doc_id,
        brain_id=brain_id,
        path=path,
        title=title,
        checksum_sha256=digest,
        byte_size=len(body),
        blob_key=f"{brain_id}/{digest[:2]}/{digest}",
        commit_sha=digest[:40],
        chunk_count=len(texts),
        tags=tags or [],
        created_at=when,
        updated_at=when,
    )


def build(
    data_dir: Path,
    chunks: int,
    rng: np.random.Generator,
    vectors: Callable[[int, int], np.ndarray] | None = None,
    slug: str = "bench-100k",
    tagged: bool = True,
) -> str:
    """The brain `slug` of `chunks` chunks; `vectors(first, count)` gives the vectors of chunks
    first.. (default random unit vectors). No index is built while loading: `cairn compact` does.
    With `tagged`, each document has one to three tags (`document_tags`), which the keyword leg
    matches as words of the title; they are drawn from their own generator, so the text and the
    vectors are the same with or without them."""
    corpus = Corpus(rng)
    tags = document_tags(corpus, np.random.default_rng(29)) if tagged else None
    records = SqliteRecordStore(data_dir / "records.sqlite3")
    index = SqliteChunkIndex(
        data_dir / "chunks.sqlite3", data_dir / "vectors", DIM, background_maintenance=False
    )
    start = datetime(2025, 1, 1, tzinfo=UTC)
    brain = Brain(
        id=f"brn_{slug.replace('-', '')}",
        slug=slug,
        name=f"{chunks:,} chunks",
        embedding_model="all-minilm-l6-v2-int8",
        embedding_dim=DIM,
        created_at=start,
        updated_at=start,
    )
    BrainRepository(records).create(brain)
    docs = DocumentRepository(records)
    for first_doc in range(0, chunks // CHUNKS_PER_DOC, 200):
        ops, rows = [], []
        for d in range(first_doc, min(first_doc + 200, chunks // CHUNKS_PER_DOC)):
            when = start + timedelta(minutes=d)
            texts = [
                corpus.text(int(np.clip(rng.lognormal(4.7, 0.6), 10, 250))) for _ in range(CHUNKS_PER_DOC)
            ]
            labels = [] if tags is None else tags()
            path = f"area{d % 10}/topic{d % 97}/note-{d}.md"
            doc = document_of(f"doc_{d:07d}", brain.id, path, corpus.text(4), texts, when, labels)
            ops += [docs.put_op(doc, 0), docs.pointer_op(doc)]
            rows += [
                Chunk(
                    id=chunk_id(doc.id, i),
                    brain_id=brain.id,
                    document_id=doc.id,
                    path=doc.path,
                    ordinal=i,
                    text=text,
                    title=doc.title,
                    tags=labels,
                    created_at=when,
                )
                for i, text in enumerate(texts)
            ]
        committed = docs.commit(ops)
        first = first_doc * CHUNKS_PER_DOC
        index.upsert(
            rows, unit_vectors(rng, len(rows), DIM) if vectors is None else vectors(first, len(rows))
        )
        docs.intents.finish(committed.intents.values())  # indexed: as a write finishes its intents
    print(f"built {index.count(brain.id):,} chunks in brain {brain.slug}", flush=True)
    index.close()
    records.close()
    return brain.slug


def document_tags(corpus: Corpus, rng: np.random.Generator, kinds: int = 200) -> Callable[[], list[str]]:
    """One to three of `kinds` tags per call: content words of the corpus's first 2,000, a third
    of them namespaced (`kw:word`), as ThoughtMCP's keywords are."""
    picks = rng.choice(2000, size=kinds, replace=False) + corpus.first_content
    names = [f"kw:{word}" if i % 3 == 0 else str(word) for i, word in enumerate(corpus.words[picks].tolist())]

    def draw() -> list[str]:
        return [names[t] for t in rng.choice(kinds, size=int(rng.integers(1, 4)), replace=False)]

    return draw


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def measure(url: str, slug: str, questions: list[str]) -> list[float]:
    from mcp import Client

    timings = []
    async with Client(url) as client:
        await client.call_tool("memory_search", {"query": "warm up", "brain": slug})
        for q in questions:
            t0 = time.perf_counter()
            result = await client.call_tool("memory_search", {"query": q, "brain": slug, "top_k": 10})
            timings.append((time.perf_counter() - t0) * 1000)
            if result.is_error:
                raise SystemExit(f"memory_search failed: {result.content}")
    return timings


def serve_ready(port: int, started: float, timeout_s: float = 120.0) -> tuple[float, float]:
    """Seconds from `started` until /healthz answers, and until it says every brain is searchable
    (a big brain is compared with its records after the server listens, refused meanwhile)."""
    listening = None
    while time.perf_counter() - started < timeout_s:
        try:
            answer = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=0.5).read()
            health = json.loads(answer)
        except OSError:
            time.sleep(0.025)
            continue
        listening = listening if listening is not None else time.perf_counter() - started
        if health.get("status") == "ok":
            return listening, time.perf_counter() - started
        time.sleep(0.05)
    raise SystemExit(f"cairn serve on port {port} was not ready within {timeout_s:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse a store built before")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-100k-"))
    if (data_dir / "records.sqlite3").exists():
        slug = "bench-100k"
    else:
        started = time.perf_counter()
        slug = build(data_dir, args.chunks, rng)
        print(f"build took {time.perf_counter() - started:.1f} s", flush=True)
    port = free_port()
    cairn = Path(sys.executable).with_name("cairn")
    launched = time.perf_counter()
    server = subprocess.Popen(
        [str(cairn), "serve", "--port", str(port), "--data-dir", str(data_dir), "--log-level", "warning"]
    )
    try:
        listening, ready = serve_ready(port, launched)
        print(f"serve: /healthz answered after {listening:.2f} s; every brain searchable after {ready:.2f} s")
        corpus = Corpus(np.random.default_rng(11))
        questions = [corpus.question() for _ in range(args.queries)]
        timings = asyncio.run(measure(f"http://127.0.0.1:{port}/mcp", slug, questions))
    finally:
        server.terminate()
        server.wait(timeout=10)
    p50, p95 = np.percentile(timings, [50, 95])
    print(f"memory_search over MCP, {args.queries} queries: p50 {p50:.1f} ms  p95 {p95:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
