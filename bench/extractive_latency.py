"""Print the extractive generator's time to first delta and to Done for 10 passages of chunk size.

.venv/bin/python bench/extractive_latency.py [--passages 10] [--rounds 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import anyio

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.ports.generator import Delta, Done, Passage

_PROSE = (
    "the team agreed to ship version two on friday after the migration of records into the new index "
    "alice prefers dark mode and green tea while bob ran a charity race in may and painted a sunrise "
    "caroline went to a support group yesterday and said it was powerful for her and her friends"
)
WORDS = _PROSE.split(" ")


def passage(rng: random.Random, i: int, chars: int = 700) -> Passage:
    sentences, size = [], 0
    while size < chars:
        sentence = " ".join(rng.choices(WORDS, k=rng.randint(8, 20))).capitalize() + "."
        sentences.append(sentence)
        size += len(sentence) + 1
    return Passage(f"chk_{i}", f"doc_{i}", " ".join(sentences), 1.0 / (i + 1))


async def one(gen: ExtractiveGenerator, question: str, passages: list[Passage]) -> tuple[float, float]:
    started = time.perf_counter()
    first = 0.0
    async for event in gen.stream(question, passages):
        if isinstance(event, Delta) and not first:
            first = time.perf_counter() - started
        elif isinstance(event, Done):
            return first, time.perf_counter() - started
    raise RuntimeError("no Done")


async def main(n: int, rounds: int) -> None:
    rng = random.Random(7)
    gen = ExtractiveGenerator()
    firsts, totals = [], []
    for _ in range(rounds):
        passages = [passage(rng, i) for i in range(n)]
        question = "When did " + " ".join(rng.choices(WORDS, k=6)) + "?"
        first, total = await one(gen, question, passages)
        firsts.append(first * 1000)
        totals.append(total * 1000)
    q = statistics.quantiles
    print(f"{n} passages of ~700 chars, {rounds} questions")
    print(f"first delta ms: p50 {statistics.median(firsts):.2f}  p95 {q(firsts, n=20)[-1]:.2f}")
    print(f"done ms:        p50 {statistics.median(totals):.2f}  p95 {q(totals, n=20)[-1]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.passages, args.rounds)
