"""gbrain's document graph at scale on the embedded record store (SQLite), in process.

Builds one brain's links straight through GraphService (services/graph.py) in a temp dir:
20,000 document ids and 100,000 typed links, a tenth of them closed (valid_until in the past),
sources uniform, 30 % of targets among 1 % hub documents (so some backlink lists run to a few
hundred), then times, one call at a time:

- `GraphService.link` (single writes through the close-instead-of-create path),
- `GraphService.graph(depth=3, temporal="active")` from random documents,
- `GraphService.backlinks(limit=100, temporal="active")` of random documents, then of hubs.

    python bench/gbrain_graph.py [--docs 20000] [--links 100000] [--calls 300] [--depth 3]
                                 [--data-dir DIR] [--seed 7]

Prints the build time and p50/p95 in milliseconds per phase. Targets (issue 13): graph depth 3
p95 <= 50 ms, backlinks p95 <= 20 ms.

Phases are functions (`build_links`, `time_graph`, ...) taking the service and the document ids,
so a run through pages and the MCP surface can reuse them with the documents it created.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.domain.ids import new_id
from cairn.domain.models import Brain
from cairn.ports.clock import SystemClock
from cairn.services.graph import GraphService, LinkDraft

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


def run(args: argparse.Namespace, data_dir: Path) -> None:
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, help="keep the store here (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.data_dir is not None:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        run(args, args.data_dir)
        return
    with tempfile.TemporaryDirectory(prefix="gbrain-graph-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
