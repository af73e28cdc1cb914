"""memory_ask time to first progress notification, through MCP against `cairn serve`.

Run it against a server whose brains already hold LoCoMo, stored one brain per conversation
(slug `locomo-<sample_id>`) as the LoCoMo recall harness and bench/locomo_inprocess.py store it:
asks each conversation's first N questions with a progress token and prints p50/p95 of
the time from the call to its first notifications/progress, and of the whole call.

    python bench/ask_latency.py --data locomo-dev.json --mcp-url http://127.0.0.1:8765/mcp [--per-brain 40]

--data is the LoCoMo dev split (snap-research/locomo), default $CAIRN_LOCOMO_DATA.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np
from mcp import Client

import locomo_data


def questions(data: Path, per_brain: int) -> list[tuple[str, str]]:
    out = []
    for conv in locomo_data.load_conversations(data):
        out += [(conv.slug, q.question) for q in conv.questions[:per_brain]]
    return out


async def ask_once(client: Client, slug: str, question: str) -> tuple[float | None, float]:
    """(ms to the first progress notification, ms for the whole call)."""
    started = time.perf_counter()
    first: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if not first:
            first.append((time.perf_counter() - started) * 1000)

    args = {"query": question, "brain": slug}
    result = await client.call_tool("memory_ask", args, progress_callback=on_progress)
    if result.is_error:
        raise SystemExit(f"memory_ask failed: {result.content}")
    return (first[0] if first else None), (time.perf_counter() - started) * 1000


async def run(url: str, asks: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
    firsts, totals = [], []
    async with Client(url) as client:
        for slug, question in asks:
            first, total = await ask_once(client, slug, question)
            totals.append(total)
            if first is not None:
                firsts.append(first)
    return firsts, totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    locomo_data.add_data_argument(parser)
    parser.add_argument("--mcp-url", default="http://127.0.0.1:8080/mcp")
    parser.add_argument("--per-brain", type=int, default=40)
    args = parser.parse_args()
    asks = questions(locomo_data.data_path(parser, args), args.per_brain)
    first, total = asyncio.run(run(args.mcp_url, asks))
    f50, f95 = np.percentile(first, [50, 95])
    t50, t95 = np.percentile(total, [50, 95])
    print(f"{len(total)} asks; first progress p50 {f50:.1f} ms, p95 {f95:.1f} ms")
    print(f"whole call p50 {t50:.1f} ms, p95 {t95:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
