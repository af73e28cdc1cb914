"""A world a contract suite built through the services, copied below the ports into a fresh
container's stores, so a module builds it once per record store and each test starts from a copy
it may change.

The records are copied as each store keeps them (versions included): the fake's rows, SQLite's
`items` table, the DynamoDB table's raw items (a Scan, then BatchWriteItem). The in-memory blobs,
chunk index and jobs are copied too, and the clock set to where the build left it. What the copy
leaves out is only the building container's own caches: the test's container starts cold, as a
new process on the same store would.
"""

from __future__ import annotations

import copy
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container
from cairn.ports.records import RecordStore
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobRunner
from tests.fakes.records import MemoryRecordStore


@dataclass(frozen=True)
class WorldCopy:
    records: list[Any]
    blobs: dict[str, bytes]
    chunks: dict[str, Any]
    chunk_seq: int
    jobs: dict[str, Any]
    now: datetime


def take(c: Container, clock: FakeClock) -> WorldCopy:
    """What `c`'s stores hold now (its blobs, chunks and jobs the in-memory fakes)."""
    blobs, chunks, jobs = _fakes(c)
    return WorldCopy(
        records=_raw_records(c.adapters.records),
        blobs=dict(blobs.items),
        chunks=copy.deepcopy(chunks.items),
        chunk_seq=chunks._seq,
        jobs=copy.deepcopy(jobs._store.rows),
        now=clock.current,
    )


def put_back(world: WorldCopy, c: Container, clock: FakeClock) -> None:
    """Write `world` into `c`'s stores, new and empty (of the kinds `take` read it from)."""
    blobs, chunks, jobs = _fakes(c)
    _write_raw_records(c.adapters.records, world.records)
    blobs.items.update(world.blobs)
    chunks.items.update(copy.deepcopy(world.chunks))
    chunks._seq = world.chunk_seq
    jobs._store.rows.update(copy.deepcopy(world.jobs))
    clock.current = world.now


def _fakes(c: Container) -> tuple[MemoryBlobStore, MemoryChunkIndex, MemoryJobRunner]:
    blobs, chunks, jobs = c.adapters.blobs, c.adapters.chunks, c.adapters.jobs
    assert isinstance(blobs, MemoryBlobStore) and isinstance(chunks, MemoryChunkIndex)
    assert isinstance(jobs, MemoryJobRunner)
    return blobs, chunks, jobs


def _raw_records(records: RecordStore) -> list[Any]:
    if isinstance(records, MemoryRecordStore):
        return list(records.rows.items())
    if isinstance(records, SqliteRecordStore):
        with closing(sqlite3.connect(records._path)) as conn:
            return conn.execute("SELECT pk, sk, data, version FROM items").fetchall()
    if isinstance(records, DynamoRecordStore):
        raw: list[Any] = []
        for page in records.client.get_paginator("scan").paginate(TableName=records.table):
            raw.extend(page["Items"])
        return raw
    raise TypeError(f"no copy of a {type(records).__name__}")


def _write_raw_records(records: RecordStore, raw: list[Any]) -> None:
    if isinstance(records, MemoryRecordStore):
        records.rows.update(raw)
    elif isinstance(records, SqliteRecordStore):
        with closing(sqlite3.connect(records._path)) as conn, conn:
            conn.executemany("INSERT INTO items (pk, sk, data, version) VALUES (?, ?, ?, ?)", raw)
    elif isinstance(records, DynamoRecordStore):
        for start in range(0, len(raw), 25):
            requests = [{"PutRequest": {"Item": item}} for item in raw[start : start + 25]]
            left = records.client.batch_write_item(RequestItems={records.table: requests})
            assert not left["UnprocessedItems"], left
    else:
        raise TypeError(f"no copy into a {type(records).__name__}")
