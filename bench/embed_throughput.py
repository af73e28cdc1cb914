"""Print OnnxEmbedder throughput: chunk batches, single lines, and 8 concurrent callers.

    .venv/bin/python bench/embed_throughput.py [--model-dir DIR] [--threads N] [--rounds R]

Each figure is the best of R interleaved rounds: other processes on a 2-core machine add noise.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.ports.embedder import Embedder

_PROSE = (
    "the memory agent stores a document about the deployment of our service and the user said "
    "that she prefers dark mode while the team agreed to ship version two on friday after the "
    "migration of records into the new index because search quality improved with hybrid ranking"
)
WORDS = _PROSE.split(" ")
LINES = [
    "hi, can you remind me what we decided yesterday?",
    "sure, give me a second",
    "we agreed to move the launch to friday",
    "did alice finish the migration?",
    "not yet, she needs one more day",
    "ok, what about the docs?",
    "bob is writing them now",
    "great, thanks!",
]


def chunk(rng: random.Random, words: int = 200) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def rate(work: Callable[[], int]) -> float:
    start = time.perf_counter()
    count = work()
    return count / (time.perf_counter() - start)


def concurrent(embedder: Embedder, threads: int, calls_each: int) -> int:
    def caller(offset: int) -> None:
        for i in range(calls_each):
            embedder.embed([LINES[(offset + i) % len(LINES)]])

    workers = [threading.Thread(target=caller, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return threads * calls_each


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: auto)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    embedder = OnnxEmbedder(args.model_dir, threads=args.threads)
    print(f"construct: {time.perf_counter() - start:.3f} s   (load average {os.getloadavg()[0]:.2f})")
    rng = random.Random(0)
    chunks = [chunk(rng) for _ in range(64)]
    embedder.embed(chunks[:2])

    cases: dict[str, Callable[[], int]] = {
        "chunks (~200 words), batches of 32": lambda: sum(
            len(embedder.embed(chunks[i : i + 32])) for i in range(0, 64, 32)
        ),
        "dialogue lines, one at a time": lambda: sum(len(embedder.embed([line])) for line in LINES * 8),
        "8 threads x 1 line per call, direct": partial(concurrent, embedder, 8, 16),
    }
    best = dict.fromkeys(cases, 0.0)
    for _ in range(args.rounds):  # rounds interleave the cases so a burst of load hits all alike
        for name, work in cases.items():
            best[name] = max(best[name], rate(work))
    for name, value in best.items():
        print(f"{name + ':':40} {value:7.1f} texts/s")
    print(f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
