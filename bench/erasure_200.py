"""An erasure of one agent's 200 documents, on the embedded store and on DynamoDB and S3 under moto:
seconds per erasure and the record store's writes, so a step added per document shows.

    .venv/bin/python bench/erasure_200.py [--store sqlite|moto] [--documents 200] [--rounds 3]

Each round seeds a fresh store with `--documents` notes in the agent scope memory/agent/ada/ and
as many of another agent beside them, in one brain, then times `erase("agent_scope", "ada")` (what
`POST /v1/erasures` runs), the scrub of the store's files included on SQLite. `sqlite`: the real
embedded store (SQLite records and chunk index, files), the tests' hashing embedder for the model;
`moto`: DynamoDB records and S3 blobs under moto (the contract suites' set-up), the fake chunk
index. Writes count the record store's transactions, a put or delete of one item being one; on
`moto` the DynamoDB and S3 requests the erasure sends are counted too (a botocore event hook on
each client), a document erased, by operation.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cairn.auth import access
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.closing import close_stores
from cairn.config import Settings
from hostile_services import _hashing_store


@contextmanager
def _sqlite() -> Iterator[Container]:
    with tempfile.TemporaryDirectory() as data:
        c = _hashing_store(Path(data))
        try:
            yield c
        finally:
            close_stores(c)


@contextmanager
def _moto() -> Iterator[Container]:
    import boto3
    import pytest
    from tests.contract.aws_storage import (
        BUCKET,
        DYNAMODB_CONFIG,
        REGION,
        TABLE,
        create_bucket,
        create_table,
        moto_with,
    )
    from tests.fakes.container import fake_adapters

    from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
    from cairn.adapters.aws.s3_blobs import S3BlobStore

    with pytest.MonkeyPatch.context() as env, moto_with(env), tempfile.TemporaryDirectory() as tmp:
        dynamodb = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
        create_table(dynamodb, TABLE)
        s3 = boto3.client("s3", region_name=REGION)
        create_bucket(s3, BUCKET)
        adapters = replace(
            fake_adapters(),
            records=DynamoRecordStore(dynamodb, TABLE),
            blobs=S3BlobStore(s3, BUCKET, prefix="blobs"),
        )
        yield build_container(Settings(data_dir=Path(tmp) / "data"), adapters)


STORES: dict[str, Callable[[], Any]] = {"sqlite": _sqlite, "moto": _moto}


def _count_writes(c: Container) -> list[int]:
    records = c.documents.repo.records
    counted = [0]
    inside = [0]
    transact, put, delete = records.transact, records.put, records.delete

    def counted_transact(ops: Any) -> Any:
        counted[0] += 0 if inside[0] else 1
        return transact(ops)

    def one_item(write: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        inside[0] += 1
        try:
            return write(*args, **kwargs)
        finally:
            inside[0] -= 1

    records.transact = counted_transact  # type: ignore[method-assign]
    records.put = lambda *a, **k: one_item(put, *a, **k)  # type: ignore[method-assign]
    records.delete = lambda *a, **k: one_item(delete, *a, **k)  # type: ignore[method-assign]
    return counted


def _count_requests(c: Container) -> collections.Counter[str]:
    """The AWS requests sent from here on, "<service> <operation>" (none on the embedded store)."""
    sent: collections.Counter[str] = collections.Counter()

    def count(model: Any, **_: Any) -> None:
        sent[f"{model.service_model.service_name} {model.name}"] += 1

    for client in (
        getattr(c.documents.repo.records, "client", None),
        getattr(c.documents.blobs, "client", None),
    ):
        if client is not None:
            client.meta.events.register("provide-client-params", count)
    return sent


def round_once(store: str, documents: int) -> tuple[float, int, dict[str, int], collections.Counter[str]]:
    with STORES[store]() as c, access.as_system():
        brain = c.brains.create("Shore", slug="shore")
        for n in range(documents):
            for agent in ("ada", "bo"):
                text = f"# Note {n}\n\n{agent.title()}'s note {n}: the harbour lamp code is {1000 + n}."
                c.documents.write(brain, f"memory/agent/{agent}/{n}.md", text.encode())
        writes, sent = _count_writes(c), _count_requests(c)
        started = time.perf_counter()
        receipt = c.erasure.erase("agent_scope", "ada", [brain.slug])
        took = time.perf_counter() - started
        assert receipt.removed["documents"] == documents, receipt.removed
        return took, writes[0], {k: v for k, v in receipt.removed.items() if v}, sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=sorted(STORES), action="append")
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for store in args.store or sorted(STORES):
        rounds = [round_once(store, args.documents) for _ in range(args.rounds)]
        times = [t for t, _, _, _ in rounds]
        print(
            f"{store}: {args.documents} documents, median {statistics.median(times):.2f} s, "
            f"best {min(times):.2f} s, {rounds[0][1]} record-store writes; removed {rounds[0][2]}",
            flush=True,
        )
        sent = rounds[0][3]
        for service in sorted({name.split()[0] for name in sent}):
            mine = {name.split()[1]: n for name, n in sent.items() if name.startswith(f"{service} ")}
            each = ", ".join(f"{op} {n / args.documents:.2f}" for op, n in sorted(mine.items()))
            print(f"  {service}: {sum(mine.values()) / args.documents:.2f} requests a document ({each})")


if __name__ == "__main__":
    main()
