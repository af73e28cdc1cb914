"""Questions that name an identifier, in process on the embedded store: 300 incident notes that
read alike (half name a host that is an identifier too), written one after another in one folder
(so each carries the previous one's excerpt in its keyword context), each asked about by its bare
id and in a question; the same incidents as zengram's typed events (importance drawn at random)
asked through its search; with them, 20 audit notes (and facts) that each list 15 of the ids among
other words, naming the id without answering anything about it. Prints how often the asked note
comes first, and for zengram how often it is in the first ten; each id is asked five ways as
written and three more spelt otherwise (without its hyphen, in full-width characters), and pairs of
ids in one question, where both notes should come first (docs/RELEVANCE.md, "A note that names
the identifier asked about"):

    python bench/identifiers.py [--data-dir DIR] [--asked 60]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.models import MemoryType
from cairn.ports.chunks import ChunkFilter
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery

SYSTEMS = [
    "payment gateway",
    "login service",
    "search cluster",
    "email relay",
    "billing database",
    "CDN edge",
]
FORMS = ("{}", "{} details", "What is {}?", "Tell me about {}", "What was the root cause of incident {}?")


def _unhyphened(iid: str) -> str:
    return iid.replace("-", "")


def _full_width(iid: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) for ch in iid)  # what a Japanese or Chinese IME types


SPELT = [
    ("{}", _unhyphened),
    ("What was the root cause of incident {}?", _unhyphened),
    ("{}", _full_width),
]
PAIR = "Compare the root causes of {} and {}"
HOSTS = ["web3", "db2", "edge-7", "node 4"]  # the first two are identifiers too
CAUSES = [
    "an expired TLS certificate",
    "a full disk",
    "a bad deploy",
    "a DNS misconfiguration",
    "a memory leak",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse a store (skips writing it)")
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--asked", type=int, default=60)
    args = parser.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-identifiers-"))
    reuse = (data / "records.sqlite3").exists()
    container = build_container(Settings(data_dir=data))
    ids = [f"INC-{20000 + 7 * i}" for i in range(args.notes)]
    rng = random.Random(3)
    if reuse:
        brain, events = container.brains.get("incidents"), container.brains.get("incident-events")
    else:
        brain = container.brains.create("Incidents", slug="incidents")
        events = container.brains.create("Incident events", slug="incident-events")
        for iid in ids:
            text = (
                f"Incident {iid} took down the {rng.choice(SYSTEMS)} on {rng.choice(HOSTS)} for "
                f"{rng.randint(5, 90)} minutes; the root cause was {rng.choice(CAUSES)}."
            )
            container.ingest.remember(brain, f"# {iid}\n\n{text}", path=f"incidents/{iid}.md")
            weight = rng.choice([0.5, 0.7, 0.9, 1.0])
            container.memories.store(events, MemoryInput(MemoryType.event, text, "bench", importance=weight))
        for n, start in enumerate(range(0, len(ids), 15)):
            listed = ", ".join(ids[start : start + 15])
            audit = f"Audit export {n} tags: {listed}; reviewed by the platform team in Q{n % 4 + 1}."
            container.ingest.remember(brain, f"# Audit {n}\n\n{audit}", path=f"audits/{n}.md")
            container.memories.store(events, MemoryInput(MemoryType.fact, audit, "bench"))
    asked = random.Random(7).sample(ids, args.asked)
    took: list[float] = []
    for form in FORMS:
        first = 0
        for i in asked:
            started = time.perf_counter()
            hits = container.search.search(brain, form.format(i), top_k=10, count_access=False).hits
            took.append((time.perf_counter() - started) * 1000)
            first += hits[0].path == f"incidents/{i}.md"
        print(f"{form.format('<id>')!r}: the asked note first for {first} of {len(asked)}")
    for form, spell in SPELT:
        first = 0
        for i in asked:
            hits = container.search.search(brain, form.format(spell(i)), top_k=10, count_access=False).hits
            first += hits[0].path == f"incidents/{i}.md"
        print(f"{form.format(spell('INC-20049'))!r}: the asked note first for {first} of {len(asked)}")
    for form in FORMS[:1] + FORMS[-1:]:
        first = 0
        for i in asked:
            found = container.search.passages(form.format(i), ChunkFilter(brain_ids=(brain.id,)), 5)
            first += bool(found) and found[0][0].chunk.path == f"incidents/{i}.md"
        print(f"ask's passages {form.format('<id>')!r}: the asked note first for {first} of {len(asked)}")
    pairs = list(zip(asked[::2], asked[1::2], strict=True))
    both = 0
    for a, b in pairs:
        hits = container.search.search(brain, PAIR.format(a, b), top_k=10, count_access=False).hits
        both += {h.path for h in hits[:2]} == {f"incidents/{a}.md", f"incidents/{b}.md"}
    print(f"{PAIR.format('<id>', '<id>')!r}: both notes first for {both} of {len(pairs)}")
    took.sort()
    p95 = took[int(0.95 * len(took))]
    print(f"memory_search in process, top 10: p50 {statistics.median(took):.1f} ms, p95 {p95:.1f} ms")
    for form in FORMS:
        first = ten = 0
        for i in asked:
            query = MemoryQuery(limit=10, count_access=False)
            texts = [h.text for h in container.memories.search(events, form.format(i), query)]
            first += bool(texts) and f"{i} " in texts[0]
            ten += any(f"{i} " in t for t in texts)
        shown = form.format("<id>")
        print(f"zengram {shown!r}: first for {first}, in the first ten for {ten} of {len(asked)}")
    for form, spell in SPELT:
        first = 0
        for i in asked:
            query = MemoryQuery(limit=10, count_access=False)
            texts = [h.text for h in container.memories.search(events, form.format(spell(i)), query)]
            first += bool(texts) and f"{i} " in texts[0]
        print(f"zengram {form.format(spell('INC-20049'))!r}: first for {first} of {len(asked)}")
    both = 0
    for a, b in pairs:
        query = MemoryQuery(limit=10, count_access=False)
        texts = [h.text for h in container.memories.search(events, PAIR.format(a, b), query)][:2]
        both += any(f"{a} " in t for t in texts) and any(f"{b} " in t for t in texts)
    print(f"zengram {PAIR.format('<id>', '<id>')!r}: both first for {both} of {len(pairs)}")
    print(f"data dir: {data}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
