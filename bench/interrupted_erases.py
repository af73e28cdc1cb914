"""A sweep's settle of many erases stopped half-way (services/erasure/interrupted.py) beside a long
erasure log: `--marks` documents each left with its bytes gone and its record standing, and
`--receipts` finished erasures on record (the log keeps every receipt), `--others` documents
kept whole in the same folder. Prints the settle's time
and its record-store calls, by kind, and the erasure-log items it read (fake adapters, in memory):

    python bench/interrupted_erases.py [--marks 100] [--receipts 2000] [--others 0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fakes.container import fake_adapters


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--marks", type=int, default=100)
    parser.add_argument("--receipts", type=int, default=2000)
    parser.add_argument("--others", type=int, default=0, help="documents left whole in the same folder")
    args = parser.parse_args()

    from cairn import faults
    from cairn.bootstrap import build_container
    from cairn.config import Settings
    from cairn.ports.records import Item
    from cairn.services.erasure.interrupted import WRITERS_S
    from cairn.services.erasure.log import PK, Pending, Receipt

    adapters = fake_adapters()
    with tempfile.TemporaryDirectory() as scratch:
        c = build_container(Settings(data_dir=Path(scratch) / "data"), adapters)
        brain = c.brains.create("Shore", slug="shore")
        records = adapters.records
        for i in range(args.receipts):
            receipt = Receipt(
                id=f"era_{i:06d}",
                kind="thoughtmcp_user",
                subject_digest="0" * 16,
                brains=[brain.id],
                removed={},
                status="completed",
                started_at=datetime.now(UTC),
            )
            records.put(Item(PK, receipt.id, Pending(receipt=receipt).model_dump(mode="json")), 0)
        for i in range(args.others):
            c.documents.write(brain, f"notes/kept{i:05d}.md", f"kept note {i}".encode())
        for i in range(args.marks):
            c.documents.write(brain, f"notes/n{i:05d}.md", f"note {i} of the lamp".encode())
            try:
                with faults.armed("documents.bytes_erased"):
                    c.documents.erase(brain, f"notes/n{i:05d}.md")
            except faults.InjectedFault:
                pass
        adapters.clock.advance(WRITERS_S + 1)  # type: ignore[attr-defined]

        calls: Counter[str] = Counter()
        log_items = 0

        def counting(name: str) -> Any:
            call = getattr(records, name)

            def counted(*a: Any, **k: Any) -> Any:
                nonlocal log_items
                calls[name] += 1
                found = call(*a, **k)
                if name == "query" and a and a[0] == PK:
                    log_items += len(found.items)
                return found

            return counted

        for name in ("get", "get_many", "query", "scan", "transact", "put", "delete"):
            setattr(records, name, counting(name))
        started = time.perf_counter()
        settled = c.pending_links.settle_counted()
        took = time.perf_counter() - started
    print(
        f"{settled.erased} of {args.marks} erases finished beside {args.receipts} receipts in "
        f"{took * 1000:.0f} ms; record-store calls {sum(calls.values())} ({dict(calls)}); "
        f"erasure-log items read {log_items}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
