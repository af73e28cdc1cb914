"""Paging a large brain's listing through REST on the embedded SQLite record store.

Writes `--docs` document records straight to SQLite (no embedding: only the listing is measured),
then lists the brain recursively through `GET /v1/brains/{id}/documents` page by page (the default
page of 10,000), and a shallow listing of the root (one directory holding everything). Prints the
seconds per recursive page (p50 / max), the shallow listing's seconds, and the peak Python heap
(tracemalloc) while paging: it stays about one page's worth whatever the brain's size.

    python bench/list_pages.py [--docs 100050]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

from fastapi.testclient import TestClient

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fakes.container import fake_adapters
from tests.support.documents import seed_documents


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_050)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        adapters = replace(fake_adapters(), records=SqliteRecordStore(Path(tmp) / "records.db"))
        container = build_container(Settings(data_dir=Path(tmp) / "data"), adapters)
        brain = container.brains.create("Big", slug="big")
        seed_documents(container.documents.repo, brain.id, (f"notes/{i:07d}.md" for i in range(args.docs)))
        url = "/v1/brains/big/documents"
        with TestClient(create_app(container), base_url="http://localhost") as client:
            seconds: list[float] = []
            listed, cursor = 0, None
            tracemalloc.start()
            while True:
                params = {"recursive": "true"} | ({"cursor": cursor} if cursor else {})
                start = time.perf_counter()
                body = client.get(url, params=params).json()
                seconds.append(time.perf_counter() - start)
                listed += len(body["items"])
                cursor = body.get("next_cursor")
                if cursor is None:
                    break
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            start = time.perf_counter()
            shallow = client.get(url, params={"dir": ""}).json()["items"]
            shallow_s = time.perf_counter() - start
    assert listed == args.docs and [i["path"] for i in shallow] == ["notes"]
    print(f"documents listed: {listed} in {len(seconds)} pages")
    print(f"recursive page seconds: p50 {statistics.median(seconds):.3f}  max {max(seconds):.3f}")
    print(f"shallow root listing seconds: {shallow_s:.4f}")
    print(f"peak traced heap while paging: {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
