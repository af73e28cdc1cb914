"""The two shapes a core capability is tested on: the embedded store (SQLite records and chunk
index, files for blobs) and the AWS adapters (DynamoDB and S3 under moto, OpenSearch over the fake
cluster); the embedder is the fake's either way. `adapters_for(shape, request, tmp)` yields them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex
from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Adapters, Container, build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.contract.aws_storage import (
    BUCKET,
    DYNAMODB_CONFIG,
    REGION,
    S3_CONFIG,
    TABLE,
    create_bucket,
    create_table,
    mocked_aws,
    moto_with,
)
from tests.fakes.container import fake_adapters
from tests.unit.aws.test_opensearch_fake import FakeCluster, fake_client

SHAPES = ("embedded", "aws")
DIM = 64


def embedded(data: Path) -> Adapters:
    data.mkdir(parents=True, exist_ok=True)
    return replace(
        fake_adapters(DIM),
        records=SqliteRecordStore(data / "records.sqlite3"),
        chunks=SqliteChunkIndex(data / "chunks.sqlite3", data / "vectors", DIM),
        blobs=FileBlobStore(data / "blobs"),
    )


def aws() -> Adapters:
    """Inside mocked_aws: the table and the versioned bucket as the template makes them."""
    dynamodb = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
    create_table(dynamodb, TABLE)
    s3 = boto3.client("s3", region_name=REGION, config=S3_CONFIG)
    create_bucket(s3, BUCKET)
    return replace(
        fake_adapters(DIM),
        records=DynamoRecordStore(dynamodb, TABLE),
        blobs=S3BlobStore(s3, BUCKET, prefix="blobs"),
        chunks=OpenSearchChunkIndex(fake_client(FakeCluster()), DIM),
    )


@contextmanager
def adapters_for(shape: str, request: pytest.FixtureRequest, tmp: Path) -> Iterator[Adapters]:
    """`fakes` (every port in memory), `embedded` (SQLite and files under `tmp`) or `aws` (moto
    and the OpenSearch fake)."""
    if shape == "aws":
        with mocked_aws(request):
            yield aws()
    else:
        with adapters_with(shape, None, tmp) as adapters:
            yield adapters


@contextmanager
def adapters_with(shape: str, monkeypatch: pytest.MonkeyPatch | None, tmp: Path) -> Iterator[Adapters]:
    """adapters_for with the caller's monkeypatch, which `aws` needs (for a fixture wider than one
    test, which has no function-scoped one)."""
    if shape == "fakes":
        yield fake_adapters(64)
    elif shape == "aws":
        assert monkeypatch is not None, "the aws shape needs a monkeypatch"
        with moto_with(monkeypatch):
            yield aws()
    else:
        yield embedded(tmp / "data")


@contextmanager
def served(
    shape: str, request: pytest.FixtureRequest, tmp: Path, **settings: Any
) -> Iterator[tuple[Container, TestClient]]:
    """A process on the shape's stores and its app in a test client, as a loopback browser or
    client with no credential reaches `cairn serve`; a server error is answered (500), not raised."""
    with adapters_for(shape, request, tmp) as adapters:
        container = process(adapters, tmp, **settings)
        app = create_app(container)
        with TestClient(app, base_url="http://localhost", raise_server_exceptions=False) as client:
            yield container, client


def process(adapters: Adapters, tmp: Path, **settings: Any) -> Container:
    """A container over the stores, as one process (its own services, locks and caches);
    `settings` as Settings takes them."""
    return build_container(Settings(data_dir=tmp / "data", **settings), adapters)


@pytest.fixture(params=SHAPES, name="c")
def fresh_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    """A fresh store (no brain yet) on each shape, as one process."""
    with adapters_for(request.param, request, tmp_path) as adapters:
        yield process(adapters, tmp_path)
