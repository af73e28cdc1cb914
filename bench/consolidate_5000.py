"""Consolidation of a 5,000-memory brain on the embedded default, followed through job status.

Writes N small memory notes (facts about a few hundred people, a share of them reworded
near-duplicates or repeated in a second session, and low-importance episodes) through the real
container (SQLite, ONNX MiniLM), queues memory_consolidate's job, works it with the durable
SQLite runner's background worker and polls GET /v1/jobs/{id}'s source (JobRunner.status)
every half second, printing progress as a client would see it:

    python bench/consolidate_5000.py [--notes 5000] [--data-dir DIR]

The target: a 5,000-memory brain consolidates in at most 60 s.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.models import DocumentSource, JobStatus, MemoryFacet, MemoryType
from cairn.services.documents.inputs import DocumentInput

FIRST = [
    "Ana",
    "Ben",
    "Caro",
    "Dev",
    "Eli",
    "Fay",
    "Gus",
    "Hana",
    "Ivo",
    "Jun",
    "Kai",
    "Lea",
    "Mo",
    "Nia",
    "Oto",
    "Pia",
    "Raf",
    "Sol",
    "Tea",
    "Uli",
]
LAST = ["Silva", "Moreau", "Okafor", "Tanaka", "Novak", "Rossi", "Berg", "Costa", "Haddad", "Ivanova"]
THINGS = [
    "plays the cello", "runs every Saturday", "moved to Lisbon", "adopted a grey cat", "paints sunrises",
    "works at a bakery", "is learning Japanese", "collects vinyl records", "volunteers at a shelter",
    "is allergic to peanuts", "drives a red van", "grows tomatoes", "climbs on Tuesdays",
    "writes poetry", "coaches a youth football team", "keeps bees", "restores old bikes",
]  # fmt: skip
WHEN = ["in May", "last year", "since 2019", "every weekend", "this spring", "after college", ""]


def fact_text(rng: random.Random) -> str:
    who = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    return " ".join(p for p in (who, rng.choice(THINGS), rng.choice(WHEN)) if p) + "."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-consolidate-"))
    container = build_container(Settings(data_dir=data_dir, prune_after_days=0))
    brain = container.brains.create("Consolidation bench", slug="consolidate-bench")
    rng = random.Random(args.seed)
    started = time.perf_counter()
    texts: list[str] = []
    for i in range(args.notes):
        roll = rng.random()
        if roll < 0.1 and texts:  # an episode worth little: pruned into the archive
            path = f"memory/global/episodes/e{i:05d}.md"
            content = f"# Episode {i}\n\nWe went over {fact_text(rng)} Nothing was decided.\n"
            memory = MemoryFacet(type=MemoryType.event, importance=0.2, sector="episodic")
            info = DocumentInput(source=DocumentSource.reflect, metadata={"kind": "episode"}, memory=memory)
        else:
            if roll < 0.25 and texts:  # the same fact again, reworded or from another session
                text = rng.choice(texts).replace(".", rng.choice([" indeed.", ", they said.", "."]))
            else:
                text = fact_text(rng)
            texts.append(text)
            content = text
            path = f"memory/global/f{i:05d}.md"
            meta = {"kind": "fact", "origins": f"ses_{rng.randrange(40)}", "confirmations": 1}
            info = DocumentInput(source=DocumentSource.extract, metadata=meta, memory=MemoryFacet())
        container.documents.write(brain, path, content.encode(), info)
    print(f"wrote {args.notes} notes in {time.perf_counter() - started:.1f} s (data: {data_dir})")

    container.jobs.start_worker()
    t0 = time.perf_counter()
    job = container.consolidation.queue(brain)
    last = ""
    while True:
        job = container.jobs.status(job.id)
        state = f"{job.status.value:9s} {job.progress:4.0%}  {job.message or ''}"
        if state != last:
            print(f"{time.perf_counter() - t0:6.1f} s  {state}")
            last = state
        if job.status in (JobStatus.completed, JobStatus.failed):
            break
        time.sleep(0.5)
    elapsed = time.perf_counter() - t0
    container.jobs.stop_worker()
    print(f"result: {job.result or job.error}")
    live = len(container.documents.documents(brain, "memory/"))
    print(f"consolidated {args.notes} notes in {elapsed:.1f} s (target 60 s); {live} live documents remain")
    return 0 if job.status is JobStatus.completed else 1


if __name__ == "__main__":
    raise SystemExit(main())
