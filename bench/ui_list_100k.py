"""The web UI's item list on a 100,000-item brain (embedded SQLite record store): server time of
the first page, a page deep in the brain (by its cursor), a page filtered to a kind that is 1% of
the brain (its read stops at the scan budget), and the brains page (which counts up to 1,000 items
per brain). Records are written straight to SQLite: only what the pages read is measured.

    python bench/ui_list_100k.py [--items 100000] [--runs 30]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from fastapi.testclient import TestClient

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.models import MemoryFacet, MemoryType
from cairn.entrypoints.http import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fakes.container import fake_adapters
from tests.support.documents import a_document

BATCH = 100


def seed(container, brain_id: str, items: int) -> None:  # type: ignore[no-untyped-def]
    repo = container.documents.repo
    docs = []
    for n in range(items):
        if n % 100 == 0:  # 1% typed memories, spread through the path order
            doc = a_document(f"mem_seed{n:08d}", f"notes/{n:07d}-memory.md", brain_id=brain_id)
            doc = doc.model_copy(update={"memory": MemoryFacet(type=MemoryType.fact)})
        else:
            doc = a_document(f"doc_seed{n:08d}", f"notes/{n:07d}.md", brain_id=brain_id)
        docs.append(doc)
        if len(docs) == BATCH:
            repo.commit([repo.put_op(d, None) for d in docs])
            docs = []
    if docs:
        repo.commit([repo.put_op(d, None) for d in docs])


def timed(client: TestClient, url: str, runs: int) -> tuple[float, float, str]:
    seconds = []
    body = ""
    for _ in range(runs):
        start = time.perf_counter()
        reply = client.get(url)
        seconds.append(time.perf_counter() - start)
        assert reply.status_code == 200, reply.text[:500]
        body = reply.text
    seconds.sort()
    return statistics.median(seconds) * 1000, seconds[int(0.95 * (len(seconds) - 1))] * 1000, body


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        adapters = replace(fake_adapters(), records=SqliteRecordStore(Path(tmp) / "records.db"))
        container = build_container(Settings(data_dir=Path(tmp) / "data"), adapters)
        brain = container.brains.create("Big", slug="big")
        started = time.perf_counter()
        seed(container, brain.id, args.items)
        print(f"seeded {args.items} items in {time.perf_counter() - started:.1f} s")
        with TestClient(create_app(container), base_url="http://localhost") as client:
            p50, p95, body = timed(client, "/ui/brains/big", args.runs)
            rows = body.count("/ui/brains/big/items/")
            print(f"first page ({rows} rows): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
            cursor = None
            for _ in range(args.items // 100):  # walk ~half the brain by cursor, then time that page
                found = re.search(
                    r'cursor=([^"&]+)"', client.get(f"/ui/brains/big?cursor={cursor or ''}").text
                )
                if not found:
                    break
                cursor = found.group(1)
            p50, p95, _ = timed(client, f"/ui/brains/big?cursor={cursor}", args.runs)
            print(f"a page {args.items // 2} items deep: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
            p50, p95, body = timed(client, "/ui/brains/big?kind=typed+memory", args.runs)
            rows = body.count("/ui/brains/big/items/")
            print(f"filtered to the 1% typed memories ({rows} rows): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
            p50, p95, _ = timed(client, "/ui", args.runs)
            print(f"brains page: p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
