"""Mnemosyne's search and list_items at scale on the embedded store, through MCP.

Build (in process, on the real local adapters: SQLite records, file blobs, SQLite FTS5 + vector
files): five libraries of five types, 1,000 items each in ten collections, about ten chunks per
item (50,000 chunks in all), every item ingested through IngestService.ingest_bytes, so it is
chunked, indexed and linked into the concept graph as any ingest is. Item text is generated: a
Zipf vocabulary (bench/chunk_index_100k.py's Corpus) with two or three capitalised names per
paragraph drawn from 3,000 (the concepts). To build in minutes rather than the ~10 the ONNX
model would take for 50,000 chunks, the build embeds with a hashing embedder of the same
dimension and model id (deterministic unit vectors); serving uses the real ONNX model, so every
query is embedded for real and the vector leg scans the same number of 384-dimension rows.

Measure (through `cairn serve` on that data dir, the official MCP client against /mcp/mnemosyne/,
any bearer token on the open loopback server, one call at a time, wall time around call_tool):

- search with all three legs (200 queries: two to four content words and a name), re-ranking off,
- search with vector + fulltext only (the same queries),
- list_items over all libraries, limit 50, at random offsets across the 5,000 items (300 calls),
  and within one library.

    python bench/mnemosyne_search.py [--items 1000] [--calls 200] [--data-dir DIR] [--seed 11]

Targets (issue 14): search p95 <= 80 ms with all three legs, <= 40 ms vector + fulltext only;
list_items p95 <= 20 ms at 5,000 items. With --data-dir the store is kept in DIR and reused.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.bootstrap import build_container
from cairn.bootstrap.local import local_adapters
from cairn.bootstrap.models import local_embedder
from cairn.config import Settings
from chunk_index_100k import Corpus
from gbrain_graph import Timings, serving, text_of

TYPES = ("fiction", "technical", "journal", "business", "finance")
COLLECTIONS = 10
PARAGRAPHS = 10  # per item; one chunk each at the default chunk size
NAMES = 3000
BUILT = "mnemosyne-built.json"


class HashingEmbedder:
    """Deterministic unit vectors from a text's digest: an embedder for building, not for meaning."""

    def __init__(self, dimension: int, model_id: str) -> None:
        self.dimension = dimension
        self.model_id = model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            row = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows) if rows else np.zeros((0, self.dimension), dtype=np.float32)


def names(rng: random.Random, corpus: Corpus) -> list[str]:
    made: set[str] = set()
    while len(made) < NAMES:
        made.add(" ".join(w.title() for w in corpus.text(rng.choice((1, 2, 2))).split()))
    return sorted(made)


def paragraph(corpus: Corpus, people: Sequence[str], rng: random.Random) -> str:
    words = corpus.text(rng.randint(70, 95)).split()
    for name in rng.sample(list(people), rng.randint(2, 3)):
        words.insert(rng.randrange(1, len(words)), name)
    return " ".join(words).capitalize() + "."


def build(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    built = data_dir / BUILT
    if built.exists():
        print(f"reusing the store in {data_dir}")
        return dict(json.loads(built.read_text()))
    settings = Settings(data_dir=data_dir)
    real = local_embedder(settings)
    adapters = replace(local_adapters(settings), embedder=HashingEmbedder(real.dimension, real.model_id))
    c = build_container(settings, adapters)
    rng = random.Random(args.seed)
    corpus = Corpus(np.random.default_rng(args.seed))
    people = names(rng, corpus)
    started = time.perf_counter()
    done = 0
    for kind in TYPES:
        library = c.libraries.describe(c.brains.create(f"{kind.title()} library").id, library_type=kind)
        folders = [
            c.libraries.create_collection(library, f"{kind} set {n}").folder for n in range(COLLECTIONS)
        ]
        for i in range(args.items):
            text = f"# {kind.title()} item {i}\n\n" + "\n\n".join(
                paragraph(corpus, people, rng) for _ in range(PARAGRAPHS)
            )
            path = f"{folders[i % COLLECTIONS]}/item-{i:05d}.md"
            c.ingest.ingest_bytes(library.brain, text.encode(), name=f"item-{i}.md", path=path)
            done += 1
            if done % 500 == 0:
                rate = done / (time.perf_counter() - started)
                print(f"  {done:,} items ({rate:,.0f} items/s)", flush=True)
    seconds = time.perf_counter() - started
    chunks = sum(c.search.chunks.count(lib.uid) for lib in c.libraries.libraries())
    print(f"build: {done:,} items, {chunks:,} chunks in {seconds:.0f} s", flush=True)
    state = {"names": people, "chunks": chunks, "items": done}
    built.write_text(json.dumps(state))
    return state


async def measure(url: str, state: dict[str, Any], args: argparse.Namespace) -> list[Timings]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(args.seed + 1)
    corpus = Corpus(np.random.default_rng(args.seed + 1))
    people: list[str] = state["names"]
    queries = [
        f"{corpus.question().removeprefix('what did ').removesuffix(' do?')} {rng.choice(people)}"
        for _ in range(args.calls)
    ]
    http = httpx2.AsyncClient(headers={"authorization": "Bearer bench"}, timeout=60)
    out: list[Timings] = []
    async with Client(streamable_http_client(url, http_client=http)) as m:
        libraries = json.loads(text_of(await m.call_tool("list_libraries", {})))["libraries"]
        for warm in queries[:10]:
            await m.call_tool("search", {"query": warm, "rerank": False})

        async def timed(name: str, calls: Sequence[dict[str, Any]], tool: str) -> None:
            ms: list[float] = []
            for arguments in calls:
                start = time.perf_counter()
                result = await m.call_tool(tool, arguments)
                ms.append((time.perf_counter() - start) * 1000)
                if result.is_error:
                    raise SystemExit(f"{tool} failed: {result.content}")
            out.append(Timings(name, ms))
            print(out[-1].line(), flush=True)

        three = [{"query": q, "rerank": False} for q in queries]
        two = [{"query": q, "rerank": False, "search_types": ["vector", "fulltext"]} for q in queries]
        await timed("search, vector + fulltext + graph", three, "search")
        await timed("search, vector + fulltext", two, "search")
        total = state["items"]
        offsets = [{"limit": 50, "offset": rng.randrange(0, total - 50)} for _ in range(300)]
        await timed(f"list_items, all libraries ({total:,} items), random offsets", offsets, "list_items")
        one = libraries[0]["uid"]
        within = [
            {"library_uid": one, "limit": 50, "offset": rng.randrange(0, args.items - 50)} for _ in range(300)
        ]
        await timed(f"list_items, one library ({args.items:,} items)", within, "list_items")
        found = json.loads(text_of(await m.call_tool("search", three[0])))
        print(f"sample: {found['total_candidates']} candidates, legs {found['search_types_used']}")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000, help="items per library (five libraries)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        state = build(data_dir, args)
        print(f"store: {state['items']:,} items, {state['chunks']:,} chunks", flush=True)
        with serving(data_dir) as gbrain_url:
            url = gbrain_url.removesuffix("/mcp/gbrain") + "/mcp/mnemosyne/"
            timings = asyncio.run(measure(url, state, args))
        for t in timings:
            p95 = statistics.quantiles(t.ms, n=20)[18]
            print(f"{t.name}: p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
