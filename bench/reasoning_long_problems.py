"""Print the CPU time and reply size of the offline reasoning tools on long problems, in process.

Shapes, each of `--sentences` short sentences (the rules read the first 20,000 characters):
"first" (every sentence starts with "First"), "stages" (half the sentences, then a "Then" one and
the other half), "goals" (every sentence "We need to fix log i": a goal and a step each).

    .venv/bin/python bench/reasoning_long_problems.py [--sentences 1000] [--shape first]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.services.thoughtmcp.reasoning.decompose import decompose
from cairn.services.thoughtmcp.reasoning.service import MAX_RULE_CHARS, ReasoningService

ACTIONS = ("check logs", "restart it", "ping host", "read docs", "fix bug")


def problem(shape: str, n: int) -> str:
    if shape == "first":
        return " ".join(f"First {ACTIONS[i % 5]}." for i in range(n))
    if shape == "stages":
        return " ".join(("Then c" if i == n // 2 else "C") + f"heck {ACTIONS[i % 5]}." for i in range(n))
    return " ".join(f"We need to fix log {i}." for i in range(n))


def measure(name: str, call: Callable[[], Any]) -> None:
    started = time.process_time()
    reply = call()
    seconds = time.process_time() - started
    size = f", reply {len(json.dumps(reply)) / 1e6:.2f} MB" if isinstance(reply, dict) else ""
    print(f"  {name}: {seconds:.2f} s CPU{size}")


def run(service: ReasoningService, text: str) -> None:
    tree = decompose(text[:MAX_RULE_CHARS], max_depth=3)
    print(f"{len(text)} characters, {len(tree.nodes)} nodes, {len(tree.edges)} edges")
    measure("decompose", lambda: decompose(text[:MAX_RULE_CHARS], max_depth=3).order)
    measure("think analytical", lambda: service.think(text, "analytical"))
    measure("think synthetic", lambda: service.think(text, "synthetic"))
    measure("think parallel", lambda: service.think(text, "parallel"))
    measure("analyze", lambda: service.analyze(text))
    measure("breakdown", lambda: service.breakdown(text))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--shape", choices=["first", "stages", "goals"], action="append")
    args = parser.parse_args()
    service = ReasoningService(ExtractiveGenerator())
    for shape in args.shape or ["first", "stages", "goals"]:
        print(f"{shape}: ", end="")
        run(service, problem(shape, args.sentences))


if __name__ == "__main__":
    main()
