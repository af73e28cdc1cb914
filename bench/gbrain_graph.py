"""gbrain at scale on the embedded stores (SQLite records, file blobs, SQLite FTS5 + vectors, ONNX
MiniLM), in two phases.

`graph` (in process): one brain's links straight through GraphService (services/links/graph.py) in a temp
dir: 20,000 document ids and 100,000 typed links, a tenth of them closed (valid_until in the past),
sources uniform, 30 % of targets among 1 % hub documents (so some backlink lists run to a few
hundred), then times, one call at a time:

- `GraphService.link` (single writes through the close-instead-of-create path),
- `GraphService.graph(depth=3, temporal="active")` from random documents,
- `GraphService.backlinks(limit=100, temporal="active")` of random documents, then of hubs.

`mcp` (through `cairn serve`): 20,000 real pages put through PageService.put in process (the
brain_put path: page text in the blob store, document records, chunks embedded with MiniLM and
indexed; pages of 60-110 words, one chunk (a few two), with frontmatter and a timeline, in five
wings), then 100,000 links among their documents drawn as in `graph` and written through
GraphService.add_many (the records brain_link writes), then `cairn serve` on that data dir, timed
one call at a time with the official MCP client against /mcp/gbrain, client side (wall time around
each call_tool):

- brain_graph depth 3 from random pages (300 calls),
- brain_backlinks of random pages (300), then of hub pages (100),
- brain_put of a 10 KB page (17 sections): one create, then 99 updates at the expected version,
  each rewriting one section (so one chunk is re-embedded),
- brain_query, 200 varied queries (2-6 rare words, or two of the commonest words and a rare one).

    python bench/gbrain_graph.py [--phase graph|mcp|all] [--docs 20000] [--links 100000]
                                 [--calls 300] [--depth 3] [--data-dir DIR] [--seed 7]

Prints the build times and p50/p95 in milliseconds per measurement. Targets (issue 13): brain_graph
depth 3 p95 <= 50 ms and brain_backlinks p95 <= 20 ms on the embedded store; brain_put p95 <= 50 ms
for a 10 KB page; brain_query p95 <= 60 ms at 20,000 pages. With --data-dir the `mcp` phase keeps
its pages in DIR/pages and reuses them on the next run (only the timing runs again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.ids import new_id
from cairn.domain.models import Brain
from cairn.ports.clock import SystemClock
from cairn.services.links.graph import GraphService, LinkDraft
from chunk_index_100k import Corpus

RELATIONSHIPS = ["works_at", "advises", "founded", "invested_in", "mentions", "related", "reports_to"]
HUB_SHARE = 0.3  # of link targets, drawn among the hubs
HUB_FRACTION = 0.01  # of documents
CLOSED_SHARE = 0.1
BATCH = 5000  # drafts per add_many call (one block of ids each)


@dataclass
class Timings:
    name: str
    ms: list[float]

    def line(self) -> str:
        q = statistics.quantiles(self.ms, n=100, method="inclusive")
        return f"{self.name:<28} p50 {q[49]:7.2f} ms   p95 {q[94]:7.2f} ms   max {max(self.ms):7.2f} ms"


def make_brain() -> Brain:
    now = datetime.now(UTC)
    return Brain(
        id="brn_benchgraph",
        slug="bench-graph",
        name="graph bench",
        embedding_model="m",
        embedding_dim=384,
        created_at=now,
        updated_at=now,
    )


def make_doc_ids(count: int) -> list[str]:
    return [new_id("doc") for _ in range(count)]


def random_draft(rng: random.Random, docs: Sequence[str], hubs: Sequence[str]) -> LinkDraft:
    source = rng.choice(docs)
    target = source
    while target == source:
        target = rng.choice(hubs) if rng.random() < HUB_SHARE else rng.choice(docs)
    year = rng.randint(2018, 2024)
    roll = rng.random()
    if roll < CLOSED_SHARE:  # closed: ended in the past
        start = f"{year}-{rng.randint(1, 12):02d}"
        end = f"{year + 1}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        return LinkDraft(source, target, rng.choice(RELATIONSHIPS), start, end)
    if roll < 0.4:  # started at a known time, still open
        return LinkDraft(source, target, rng.choice(RELATIONSHIPS), f"{year}-{rng.randint(1, 12):02d}-01")
    return LinkDraft(source, target, rng.choice(RELATIONSHIPS))


def build_links(
    svc: GraphService, brain: Brain, docs: Sequence[str], links: int, rng: random.Random
) -> float:
    """Write `links` random links among `docs` through GraphService.add_many; returns seconds."""
    hubs = docs[: max(1, int(len(docs) * HUB_FRACTION))]
    drafts = [random_draft(rng, docs, hubs) for _ in range(links)]
    start = time.perf_counter()
    for first in range(0, len(drafts), BATCH):
        svc.add_many(brain, drafts[first : first + BATCH])
    return time.perf_counter() - start


def timed(name: str, calls: int, call: Callable[[int], object]) -> Timings:
    ms = []
    for i in range(calls):
        start = time.perf_counter()
        call(i)
        ms.append((time.perf_counter() - start) * 1000)
    return Timings(name, ms)


def time_link_writes(
    svc: GraphService, brain: Brain, docs: Sequence[str], calls: int, rng: random.Random
) -> Timings:
    """Single link() calls: half create an open link, half close it again by its triple."""
    pairs = [(rng.choice(docs), rng.choice(docs), rng.choice(RELATIONSHIPS)) for _ in range(calls // 2 + 1)]

    def call(i: int) -> object:
        source, target, rel = pairs[i // 2]
        if i % 2 == 0:
            return svc.link(brain, source, target, rel, valid_from="2025-01-01")
        return svc.link(brain, source, target, rel, valid_until="2025-12-31")

    return timed("link (create / close)", calls, call)


def time_graph(
    svc: GraphService, brain: Brain, docs: Sequence[str], calls: int, depth: int, rng: random.Random
) -> tuple[Timings, float, float]:
    """graph(depth) from random documents; also the mean node and edge counts."""
    roots = [rng.choice(docs) for _ in range(calls)]
    sizes: list[tuple[int, int]] = []

    def call(i: int) -> object:
        g = svc.graph(brain, roots[i], depth=depth, temporal="active")
        sizes.append((len(g.nodes), len(g.edges)))
        return g

    timings = timed(f"graph depth {depth}", calls, call)
    return timings, statistics.mean(n for n, _ in sizes), statistics.mean(e for _, e in sizes)


def time_backlinks(
    svc: GraphService, brain: Brain, docs: Sequence[str], calls: int, rng: random.Random, name: str
) -> tuple[Timings, float]:
    """backlinks(limit=100, active) of random documents among `docs`; also the mean result length."""
    targets = [rng.choice(docs) for _ in range(calls)]
    lengths: list[int] = []

    def call(i: int) -> object:
        found = svc.backlinks(brain, targets[i], temporal="active", limit=100)
        lengths.append(len(found))
        return found

    return timed(name, calls, call), statistics.mean(lengths)


def run_graph(args: argparse.Namespace, data_dir: Path) -> None:
    rng = random.Random(args.seed)
    records = SqliteRecordStore(data_dir / "records.sqlite3")
    try:
        svc, brain = GraphService(records, SystemClock()), make_brain()
        docs = make_doc_ids(args.docs)
        seconds = build_links(svc, brain, docs, args.links, rng)
        print(
            f"build: {args.links:,} links among {args.docs:,} documents in {seconds:.1f} s "
            f"({args.links / seconds:,.0f} links/s, GraphService.add_many, {BATCH} per call)"
        )
        graph, nodes, edges = time_graph(svc, brain, docs, args.calls, args.depth, rng)
        print(graph.line() + f"   (mean {nodes:.0f} nodes, {edges:.0f} edges)")
        backlinks, found = time_backlinks(svc, brain, docs, args.calls, rng, "backlinks limit 100")
        print(backlinks.line() + f"   (mean {found:.1f} links)")
        hubs = docs[: max(1, int(len(docs) * HUB_FRACTION))]
        backlinks, found = time_backlinks(svc, brain, hubs, args.calls, rng, "backlinks limit 100, hubs")
        print(backlinks.line() + f"   (mean {found:.1f} links)")
        print(time_link_writes(svc, brain, docs, args.calls, rng).line())
    finally:
        records.close()


# -- the mcp phase: real pages, `cairn serve`, the official MCP client ---------------------------

WINGS = {
    "people": "person",
    "companies": "company",
    "projects": "project",
    "places": "place",
    "notes": "note",
}
COLLECTION = "default"
BUILT = "gbrain-bench.json"  # the slugs the pages phase wrote, so a later run can reuse the store
BIG_SECTIONS = 17  # ~600 characters each: a 10 KB page, one chunk per section


def page_text(corpus: Corpus, title: str, page_type: str, rng: random.Random) -> str:
    first = corpus.text(rng.randint(35, 60))
    second = corpus.text(rng.randint(25, 50))
    when = f"{rng.randint(2018, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return (
        f"---\ntitle: {title}\ntype: {page_type}\n---\n# {title}\n\n{first}.\n\n{second}.\n"
        f"---\n- {when}: {corpus.text(8)}\n"
    )


def build_pages(c: Container, count: int, corpus: Corpus, rng: random.Random) -> list[tuple[str, str]]:
    """`count` pages through PageService.put; their (slug, document id) in creation order."""
    made: list[tuple[str, str]] = []
    wings = list(WINGS)
    start = time.perf_counter()
    for i in range(count):
        wing = wings[i % len(wings)]
        name = str(corpus.text(1))
        slug = f"{wing}/{name}-{i}"
        text = page_text(corpus, f"{name.title()} {i}", WINGS[wing], rng)
        outcome = c.pages.put(f"{COLLECTION}::{slug}", text)
        made.append((slug, outcome.page.document.id))
        if (i + 1) % 2000 == 0:
            rate = (i + 1) / (time.perf_counter() - start)
            print(f"  {i + 1:,} pages ({rate:,.0f} pages/s)", flush=True)
    return made


def big_page(corpus: Corpus, revision: int, sections: list[str]) -> str:
    body = "\n\n".join(f"## Part {k}\n\n{text}" for k, text in enumerate(sections))
    return f"---\ntitle: Big page\ntype: note\nrevision: {revision}\n---\n# Big page\n\n{body}\n"


def build_store(args: argparse.Namespace, data_dir: Path) -> list[tuple[str, str]]:
    built = data_dir / BUILT
    if built.exists():
        pages = [(str(slug), str(doc_id)) for slug, doc_id in json.loads(built.read_text())]
        print(f"reusing {len(pages):,} pages in {data_dir}")
        return pages
    c = build_container(Settings(data_dir=data_dir))
    brain = c.brains.create("gbrain bench", slug=COLLECTION)
    rng = random.Random(args.seed)
    corpus = Corpus(np.random.default_rng(args.seed))
    started = time.perf_counter()
    pages = build_pages(c, args.docs, corpus, rng)
    seconds = time.perf_counter() - started
    rate = len(pages) / seconds
    print(f"build: {len(pages):,} pages through PageService.put in {seconds:.1f} s ({rate:,.0f}/s)")
    seconds = build_links(c.graph, brain, [doc_id for _, doc_id in pages], args.links, rng)
    print(f"build: {args.links:,} links among them in {seconds:.1f} s (GraphService.add_many)")
    print(f"index: {c.search.chunks.count(brain.id):,} chunks", flush=True)
    built.write_text(json.dumps(pages))
    return pages


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(data_dir: Path) -> Iterator[str]:
    """`cairn serve` on the data dir (loopback, no token), until the block ends; its gbrain URL."""
    port = free_port()
    cairn = Path(sys.executable).with_name("cairn")
    command = [
        str(cairn),
        "serve",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(command)
    try:
        for _ in range(400):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=0.5).read()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp/gbrain"
    finally:
        server.terminate()
        server.wait(timeout=20)


def text_of(result: Any) -> str:
    """A call's one text block; a refusal (JSON-RPC error) has raised already."""
    if result.is_error:
        raise SystemExit(f"call failed: {result.content}")
    text: str = result.content[0].text
    return text


async def timed_calls(
    client: Any, name: str, calls: Sequence[tuple[str, dict[str, Any]]]
) -> tuple[Timings, list[str]]:
    """Each call in turn, timed around call_tool; the timings and the answers' text."""
    ms: list[float] = []
    answers: list[str] = []
    for tool, arguments in calls:
        start = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        ms.append((time.perf_counter() - start) * 1000)
        answers.append(text_of(result))
    return Timings(name, ms), answers


async def measure(url: str, args: argparse.Namespace, pages: Sequence[tuple[str, str]]) -> None:
    from mcp import Client

    rng = random.Random(args.seed + 1)
    corpus = Corpus(np.random.default_rng(args.seed + 1))
    slugs = [slug for slug, _ in pages]
    hubs = slugs[: max(1, int(len(slugs) * HUB_FRACTION))]
    async with Client(url) as client:
        warm_up: list[tuple[str, dict[str, Any]]] = [  # load the model, warm the caches
            ("brain_query", {"query": "warm up"}),
            ("brain_graph", {"slug": slugs[0], "depth": 1}),
            ("brain_backlinks", {"slug": slugs[0]}),
        ]
        await timed_calls(client, "warm up", warm_up)

        graph = [("brain_graph", {"slug": rng.choice(slugs), "depth": args.depth}) for _ in range(args.calls)]
        timings, answers = await timed_calls(client, f"brain_graph depth {args.depth}", graph)
        nodes = statistics.mean(len(json.loads(a)["nodes"]) for a in answers)
        edges = statistics.mean(len(json.loads(a)["edges"]) for a in answers)
        print(timings.line() + f"   (mean {nodes:.0f} nodes, {edges:.0f} edges)", flush=True)

        for name, among, calls in [
            ("brain_backlinks", slugs, args.calls),
            ("brain_backlinks, hubs", hubs, 100),
        ]:
            backlinks = [("brain_backlinks", {"slug": rng.choice(among)}) for _ in range(calls)]
            timings, answers = await timed_calls(client, name, backlinks)
            found = statistics.mean(len(json.loads(a)) for a in answers)
            print(timings.line() + f"   (mean {found:.1f} links)", flush=True)

        sections = [corpus.text(rng.randint(90, 110)) for _ in range(BIG_SECTIONS)]
        slug = f"notes/big-page-{time.time_ns()}"  # a new page on every run over the same store
        first = big_page(corpus, 0, sections)
        ms: list[float] = []
        start = time.perf_counter()
        created = await client.call_tool("brain_put", {"slug": slug, "content": first})
        ms.append((time.perf_counter() - start) * 1000)
        version = int(text_of(created).rsplit("version ", 1)[1].rstrip(")"))
        for revision in range(1, 100):
            sections[rng.randrange(BIG_SECTIONS)] = corpus.text(rng.randint(90, 110))
            content = big_page(corpus, revision, sections)
            start = time.perf_counter()
            updated = await client.call_tool(
                "brain_put", {"slug": slug, "content": content, "expected_version": version}
            )
            ms.append((time.perf_counter() - start) * 1000)
            version = int(text_of(updated).rsplit("version ", 1)[1].rstrip(")"))
        size = len(first.encode())
        print(
            Timings(f"brain_put {size / 1024:.1f} KB page", ms).line()
            + f"   (create {ms[0]:.1f} ms, then 99 updates at the expected version)",
            flush=True,
        )

        queries = [corpus.question() if i % 2 else corpus.common_question() for i in range(200)]
        timings, answers = await timed_calls(
            client, "brain_query", [("brain_query", {"query": q}) for q in queries]
        )
        found = statistics.mean(len(json.loads(a)) for a in answers)
        print(timings.line() + f"   (mean {found:.1f} pages)", flush=True)


def run_mcp(args: argparse.Namespace, data_dir: Path) -> None:
    pages = build_store(args, data_dir)
    with serving(data_dir) as url:
        asyncio.run(measure(url, args, pages))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--phase", choices=["graph", "mcp", "all"], default="all")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, help="keep the stores here (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gbrain-bench-") as tmp:
        root = args.data_dir or Path(tmp)
        for phase, run in (("graph", run_graph), ("mcp", run_mcp)):
            if args.phase in (phase, "all"):
                print(f"== {phase}", flush=True)
                (root / phase).mkdir(parents=True, exist_ok=True)
                run(args, root / phase)


if __name__ == "__main__":
    main()
