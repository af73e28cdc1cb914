"""Erasing one person with 1,000 memories across surfaces from the embedded store: seconds per erasure.

    .venv/bin/python bench/erasure.py [--memories 1000] [--rounds 3] [--others 1000]

Each round seeds a fresh data directory (the real embedded store: SQLite, files, the ONNX
embedder) with `--memories` memories of "alice" spread over the surfaces that record a person:
ThoughtMCP memories of userId alice (40 %, in the ThoughtMCP brain), zengram memories stored by
source agent alice (30 %), notes in the agent scope memory/agent/alice/ (20 %) and messages of
sessions whose actor is alice (10 %), in two brains; and as many memories of other people beside
them (`--others`). Then it erases `any` alice in one call, as the admin MCP tool and the REST
route do (services/erasure/), and times it: selection, every record, blob, chunk and link, the
audit redaction and the scrub of the store's files (vector compaction, full-text merge, free-page
wipe, record-store vacuum). After each round it checks that an exact-text search for each erased
memory finds nothing and that the others' memories are all still found.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import MemoryType
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.models import NewMemory

SHARES = (("thoughtmcp", 0.4), ("zengram", 0.3), ("scope", 0.2), ("session", 0.1))


def seed(c: Container, person: str, count: int, mark: str) -> list[str]:
    """`count` memories of `person` across the surfaces; their texts."""
    thoughts = thought_brain(c.brains, None, create=True)
    assert thoughts is not None
    team = next((b for b in c.brains.list() if b.slug == "team"), None)
    team = team or c.brains.create("Team", slug="team", visibility="tenant")
    texts: list[str] = []
    sessions = {
        brain.id: c.sessions.create(brain, title=f"{person} sync", actor_id=person)
        for brain in (team, thoughts)
    }
    for surface, share in SHARES:
        for n in range(int(count * share)):
            code = n * 7919 % 10000
            text = f"{person.title()}'s {mark} memory {surface} {n}: the code for locker {n} is {code}."
            brain = team if n % 2 else thoughts
            if surface == "thoughtmcp":
                c.thoughts.remember(thoughts, NewMemory(text, person, "s1", "semantic"))
            elif surface == "zengram":
                c.memories.store(brain, MemoryInput(type=MemoryType.event, content=text, source_agent=person))
            elif surface == "scope":
                c.ingest.remember(brain, f"# {person} {n}\n\n{text}", path=f"memory/agent/{person}/{n}.md")
            else:
                meta = {"skip_extract": True}
                c.sessions.append(brain, sessions[brain.id].id, "user", text, metadata=meta)
            texts.append(text)
    return texts


def found(c: Container, texts: list[str], sample: int = 50) -> int:
    """How many of (a sample of) the texts a word-for-word search still finds in any brain: their
    own memories (documents) through the search every surface maps onto."""
    step = max(1, len(texts) // sample)
    hits = 0
    for text in texts[::step]:
        for brain in c.brains.list():
            result = c.search.search(brain, text, top_k=5, count_access=False)
            hits += any(text in h.content for h in result.hits)
    return hits


def round_once(memories: int, others: int) -> tuple[float, dict[str, int], int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        c = build_container(Settings(data_dir=Path(tmp) / "data"))
        started = time.perf_counter()
        alice = seed(c, "alice", memories, "alicemark")
        bob = seed(c, "bob", others, "bobmark")
        print(f"  seeded {memories} + {others} memories in {time.perf_counter() - started:.1f} s", flush=True)
        began = time.perf_counter()
        receipt = c.erasure.erase("any", "alice")
        seconds = time.perf_counter() - began
        left = found(c, [t for t in alice if " session " not in t])
        kept = found(c, [t for t in bob if " session " not in t])
        return seconds, receipt.removed, left, kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--others", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times = []
    for n in range(args.rounds):
        print(f"round {n + 1}:", flush=True)
        seconds, removed, left, kept = round_once(args.memories, args.others)
        counted = ", ".join(f"{v} {k}" for k, v in removed.items() if v)
        print(f"  erased in {seconds:.2f} s: {counted}")
        print(f"  sampled erased memories still found: {left}; sampled other memories found: {kept}")
        if left:
            print("FAILED: an erased memory is still found", file=sys.stderr)
            return 1
        times.append(seconds)
    median, best = statistics.median(times), min(times)
    print(f"erasure of {args.memories} memories: median {median:.2f} s, best {best:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
