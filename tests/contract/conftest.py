"""Adapter factories for the contract suites, one section per port.

To run a suite against another adapter, add a factory to that port's table: a context manager
taking the pytest request (for tmp_path, moto, ...) and yielding a ready store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Document
from cairn.ports.blobs import BlobStore
from cairn.ports.records import RecordStore
from tests.contract.aws_storage import dynamodb_records, s3_blobs
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.records import MemoryRecordStore


def _tmp(request: pytest.FixtureRequest) -> Path:
    path: Path = request.getfixturevalue("tmp_path")
    return path


# -- RecordStore -------------------------------------------------------------------------------


@contextmanager
def _memory_records(request: pytest.FixtureRequest) -> Iterator[RecordStore]:
    yield MemoryRecordStore()


@contextmanager
def _sqlite_records(request: pytest.FixtureRequest) -> Iterator[RecordStore]:
    store = SqliteRecordStore(_tmp(request) / "records.db")
    try:
        yield store
    finally:
        store.close()


RECORD_STORES: dict[str, Callable[[pytest.FixtureRequest], AbstractContextManager[RecordStore]]] = {
    "memory": _memory_records,
    "sqlite": _sqlite_records,
    "dynamodb": dynamodb_records,  # under moto
}


@pytest.fixture(params=list(RECORD_STORES))
def records(request: pytest.FixtureRequest) -> Iterator[RecordStore]:
    with RECORD_STORES[request.param](request) as store:
        yield store


# -- BlobStore ---------------------------------------------------------------------------------


@contextmanager
def _memory_blobs(request: pytest.FixtureRequest) -> Iterator[BlobStore]:
    yield MemoryBlobStore()


@contextmanager
def _file_blobs(request: pytest.FixtureRequest) -> Iterator[BlobStore]:
    yield FileBlobStore(_tmp(request) / "blobs")


BLOB_STORES: dict[str, Callable[[pytest.FixtureRequest], AbstractContextManager[BlobStore]]] = {
    "s3": s3_blobs,  # under moto
    "memory": _memory_blobs,
    "files": _file_blobs,
}


@pytest.fixture(params=list(BLOB_STORES))
def blobs(request: pytest.FixtureRequest) -> Iterator[BlobStore]:
    with BLOB_STORES[request.param](request) as store:
        yield store


# -- Documents decoded (the memory read contracts count them) ------------------------------------


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The ids of the documents decoded from their records while the test runs."""
    ids: list[str] = []
    real: Callable[..., Document] = Document.model_validate

    def counting(cls: type[Document], obj: Any, **kwargs: Any) -> Document:
        ids.append(obj.get("id") if isinstance(obj, dict) else None)
        return real(obj, **kwargs)

    monkeypatch.setattr(Document, "model_validate", classmethod(counting))
    yield ids


# A whole container over each record store, on a clock the test moves (the suites of what the
# services keep in the records: memory counts, current memories, the sweep's maintenance report).


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def c(records: RecordStore, clock: FakeClock, tmp_path: Path) -> Container:
    adapters = replace(fake_adapters(clock=clock), records=records)
    return build_container(Settings(data_dir=tmp_path / "data"), adapters)
