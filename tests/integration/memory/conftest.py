"""The world of the typed-memory and stored-bytes tests: a container over each record store (the
in-memory fake, SQLite, DynamoDB under moto) with a clock the test moves, and one brain."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, MemoryType
from cairn.ports.records import RecordStore
from cairn.services.memory.memory_model import MemoryInput
from tests.contract.aws_storage import DYNAMODB_CONFIG, TABLE, client, create_table, mocked_aws
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.records import MemoryRecordStore

START = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture(params=["fake", "sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    if request.param == "fake":
        yield MemoryRecordStore()
    elif request.param == "sqlite":
        yield SqliteRecordStore(tmp_path / "records.sqlite3")
    else:
        with mocked_aws(request):
            dynamodb = client("dynamodb", DYNAMODB_CONFIG)
            create_table(dynamodb, TABLE)
            yield DynamoRecordStore(dynamodb, TABLE)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def container(store: RecordStore, clock: FakeClock, tmp_path: Path) -> Container:
    adapters = replace(fake_adapters(clock=clock), records=store)
    return build_container(Settings(data_dir=tmp_path / "data"), adapters)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Team memory")


def superseded_line(container: Container, brain: Brain, clock: FakeClock, values: int, worded: str) -> str:
    """`values` values of the fact key `acme-db` stored a minute apart (`worded` followed by each
    one's number), each superseding the one before, then "Acme moved its Postgres to Oslo" after
    them: the id of that last, current one, which the question `worded` matches worst."""

    def store(content: str) -> str:
        value = MemoryInput(type=MemoryType.fact, key="acme-db", client_id="acme", content=content)
        return container.memories.store(brain, value).memory.id

    for n in range(values):
        clock.current = START + timedelta(minutes=n)
        store(f"{worded} {n}")
    clock.current = START + timedelta(minutes=values + 60)
    return store("Acme moved its Postgres to Oslo")
