"""zengram's HTTP API under load against `cairn serve` (the embedded default: SQLite, the ONNX
embedder): 10,000 typed memories stored with 4 requests in flight, 20 % of them superseding an
earlier fact key or status subject; then brain_search and brain_briefing latency; then a check
that exactly one memory per key and per subject is current.

    python bench/zengram_workload.py [--memories 10000] [--in-flight 4] [--queries 200] [--data-dir DIR]

Prints store throughput (memories/s), search p50/p95 and briefing p50/p95 in milliseconds, and the
current-per-key check. Targets (issue 12): store >= 40/s with 4 in flight, search p95 <= 50 ms,
briefing p95 <= 100 ms, exactly one current memory per key and subject.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np

TOPICS = [
    "billing",
    "search",
    "deploys",
    "onboarding",
    "pricing",
    "the mobile app",
    "analytics",
    "support",
    "security",
    "the data warehouse",
    "the API gateway",
    "email delivery",
]
VERBS = [
    "migrated",
    "reviewed",
    "shipped",
    "rolled back",
    "benchmarked",
    "documented",
    "refactored",
    "paused",
]
CLIENTS = ["acme", "globex", "initech", "umbrella", "hooli", "global"]
AGENTS = ["claude-code", "deploy-bot", "research-agent", "support-agent"]
STATES = ["green", "amber", "red", "paused", "degraded"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def workload(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """n memories; 20 % reuse an earlier fact key or status subject (so they supersede it)."""
    keys: list[str] = []
    subjects: list[str] = []
    out = []
    for i in range(n):
        topic, verb, client = rng.choice(TOPICS), rng.choice(VERBS), rng.choice(CLIENTS)
        agent = rng.choice(AGENTS)
        supersede = i > 50 and rng.random() < 0.2
        roll = rng.random()
        if supersede and rng.random() < 0.5 and keys:
            key = rng.choice(keys)
            out.append(
                {
                    "type": "fact",
                    "key": key,
                    "content": f"{key}: now {verb} ({i})",
                    "client_id": client,
                    "source_agent": agent,
                }
            )
        elif supersede and subjects:
            subject = rng.choice(subjects)
            state = rng.choice(STATES)
            out.append(
                {
                    "type": "status",
                    "subject": subject,
                    "status_value": state,
                    "content": f"{subject} is {state} after change {i}",
                    "source_agent": agent,
                }
            )
        elif roll < 0.25:
            key = f"{client}-{topic.replace(' ', '-')}-{i}"
            keys.append(key)
            out.append(
                {
                    "type": "fact",
                    "key": key,
                    "content": f"{client} {verb} {topic}; fact number {i}",
                    "client_id": client,
                    "source_agent": agent,
                    "importance": "high",
                }
            )
        elif roll < 0.4:
            subject = f"{topic} pipeline {i}"
            subjects.append(subject)
            out.append(
                {
                    "type": "status",
                    "subject": subject,
                    "status_value": "green",
                    "content": f"{subject} is green",
                    "source_agent": agent,
                }
            )
        elif roll < 0.55:
            out.append(
                {
                    "type": "decision",
                    "content": f"We decided to keep {topic} on {verb} plan {i}",
                    "client_id": client,
                    "source_agent": agent,
                }
            )
        else:
            out.append(
                {
                    "type": "event",
                    "content": f"{agent} {verb} {topic} for {client} (event {i})",
                    "client_id": client,
                    "source_agent": agent,
                    "importance": rng.choice(["low", "medium"]),
                }
            )
    return out


async def store_all(base: str, memories: list[dict[str, Any]], in_flight: int) -> float:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for m in memories:
        queue.put_nowait(m)
    failures: list[str] = []

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            m = queue.get_nowait()
            r = await client.post(f"{base}/memory", json=m)
            if r.status_code not in (200, 201):
                failures.append(f"{r.status_code} {r.text[:200]}")

    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=60, headers={"x-api-key": "bench"}) as client:
        done = 0
        total = len(memories)
        tasks = [asyncio.create_task(worker(client)) for _ in range(in_flight)]
        while not all(t.done() for t in tasks):
            await asyncio.sleep(5)
            now = total - queue.qsize()
            if now != done:
                done = now
                rate = done / (time.perf_counter() - started)
                print(f"  stored {done}/{total} ({rate:.1f}/s)", file=sys.stderr)
        await asyncio.gather(*tasks)
    if failures:
        raise SystemExit(f"{len(failures)} stores failed, e.g. {failures[:3]}")
    return time.perf_counter() - started


async def timed(base: str, path: str, params: list[dict[str, str]]) -> list[float]:
    out = []
    async with httpx.AsyncClient(timeout=60, headers={"x-api-key": "bench"}) as client:
        for p in params:
            t = time.perf_counter()
            r = await client.get(f"{base}{path}", params=p)
            out.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, r.text
    return out


def check_current(data: Path) -> tuple[int, int, int]:
    """Every fact key and status subject in the data directory (read in process once the server has
    stopped): (those with exactly one current memory, those with another count, memories read)."""
    from cairn.bootstrap import build_container
    from cairn.config import Settings
    from cairn.domain.models import MemoryType

    container = build_container(Settings(data_dir=data))
    brain = container.brains.list()[0]
    current: Counter[str] = Counter()
    seen: set[str] = set()
    read = 0
    for doc in container.memories.of_type(brain, [MemoryType.fact, MemoryType.status]):
        m = doc.memory
        if m is None or doc.deleted_at is not None:
            continue
        read += 1
        line = f"key:{m.key}" if m.type is MemoryType.fact else f"subject:{m.subject}"
        if (m.key if m.type is MemoryType.fact else m.subject) is None:
            continue
        seen.add(line)
        if m.current:
            current[line] += 1
    ok = sum(1 for line in seen if current[line] == 1)
    return ok, len(seen) - ok, read


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-zengram-"))
    port = free_port()
    cairn = Path(sys.executable).parent / "cairn"
    server = subprocess.Popen(
        [str(cairn), "serve", "--port", str(port), "--data-dir", str(data), "--log-level", "warning"]
    )
    try:
        for _ in range(400):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=0.5).read()
                break
            except OSError:
                time.sleep(0.05)
        base = f"http://127.0.0.1:{port}/zengram"
        rng = random.Random(12)
        memories = workload(args.memories, rng)
        took = asyncio.run(store_all(base, memories, args.in_flight))
        print(
            f"store: {len(memories)} memories in {took:.1f} s = {len(memories) / took:.1f} memories/s "
            f"({args.in_flight} in flight)"
        )
        queries = [
            {"q": f"{rng.choice(VERBS)} {rng.choice(TOPICS)}", "client_id": rng.choice(CLIENTS)}
            if i % 2
            else {"q": f"what happened with {rng.choice(TOPICS)}"}
            for i in range(args.queries)
        ]
        search = np.array(asyncio.run(timed(base, "/memory/search", queries)))
        print(
            f"brain_search: p50 {np.percentile(search, 50):.1f} ms, p95 {np.percentile(search, 95):.1f} ms "
            f"({len(search)} queries, compact)"
        )
        briefs = [
            {"since": "2000-01-01T00:00:00Z", "agent": rng.choice(AGENTS)}
            for _ in range(max(args.queries // 4, 20))
        ]
        briefing = np.array(asyncio.run(timed(base, "/briefing", briefs)))
        print(
            f"brain_briefing: p50 {np.percentile(briefing, 50):.1f} ms, "
            f"p95 {np.percentile(briefing, 95):.1f} ms "
            f"({len(briefing)} calls, compact, limit 100)"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    ok, bad, read = check_current(data)
    print(f"current per key/subject: {ok} with exactly one, {bad} otherwise ({read} facts and statuses read)")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
