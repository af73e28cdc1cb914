"""Superseding memory stores on DynamoDB under moto (the contract suites' set-up): seconds and
DynamoDB requests per store, by operation and by TransactWriteItems entry kind.

    .venv/bin/python bench/moto_memory_store.py [stores]
"""

from __future__ import annotations

import collections
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.models import MemoryType
from cairn.services.memory.memory_model import MemoryInput

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.contract.aws_storage import DYNAMODB_CONFIG, REGION, TABLE, create_table, moto_with
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.integration.memory.conftest import START

LAST = 10  # the stores measured, after the others filled the table


def main(stores: int) -> None:
    with pytest.MonkeyPatch.context() as env, moto_with(env), tempfile.TemporaryDirectory() as tmp:
        client = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
        create_table(client, TABLE)
        calls: collections.Counter[str] = collections.Counter()

        def count(params: dict[str, Any], model: Any, **_: Any) -> None:
            calls[model.name] += 1
            for entry in params.get("TransactItems", []):
                calls[f"  TransactWriteItems entry {next(iter(entry))}"] += 1

        client.meta.events.register("provide-client-params.dynamodb", count)
        clock = FakeClock(START)
        adapters = replace(fake_adapters(clock=clock), records=DynamoRecordStore(client, TABLE))
        c = build_container(Settings(data_dir=Path(tmp) / "data"), adapters)
        brain = c.brains.create("Team memory")
        started = time.perf_counter()
        for n in range(stores):
            if n == stores - LAST:
                calls.clear()
                last = time.perf_counter()
            clock.current = START + timedelta(minutes=n)
            value = MemoryInput(
                type=MemoryType.fact, key="acme-db", content=f"the Acme database is in rack {n}"
            )
            c.memories.store(brain, value)
        done = time.perf_counter()
    print(
        f"{stores} stores: {done - started:.2f} s; the last {LAST}: {(done - last) / LAST * 1000:.0f} ms each"
    )
    for name, n in sorted(calls.items()):
        print(f"{name}: {n / LAST:g} a store")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
