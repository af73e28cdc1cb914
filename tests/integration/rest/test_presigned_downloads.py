"""The store protocol's read past the response limit: with the S3 blob store, a document larger
than `read_redirect_bytes` answers 307 to a presigned GET (moto's server, over HTTP); one of at most
that many bytes, and every read of the embedded store (no signer), carries the bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_adapters, fake_container
from tests.integration.aws.moto_http import s3_over_http

LIMIT = 1024
READ = "/v1/brains/notes/documents/read"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3BlobStore]:
    with s3_over_http(monkeypatch) as blobs:
        yield blobs


def test_a_read_past_the_threshold_redirects_to_the_blob_and_one_at_it_does_not(
    tmp_path: Path, store: S3BlobStore
) -> None:
    adapters = fake_adapters()
    adapters.blobs = adapters.downloads = store
    container = build_container(Settings(data_dir=tmp_path / "data", read_redirect_bytes=LIMIT), adapters)
    brain = container.brains.create("Notes", slug="notes")
    at, past = b"a" * LIMIT, b"b" * (LIMIT + 1)
    container.documents.write(brain, "at.md", at)
    container.documents.write(brain, "past.md", past)

    with TestClient(create_app(container), base_url="http://localhost", follow_redirects=False) as client:
        inline = client.get(READ, params={"path": "at.md"})
        moved = client.get(READ, params={"path": "past.md"})
        schema = client.get("/openapi.json").json()

    assert inline.status_code == 200 and inline.content == at
    assert moved.status_code == 307 and moved.content == b""
    assert moved.headers["cache-control"] == "no-store"
    fetched = httpx.get(moved.headers["location"], timeout=30)
    assert fetched.status_code == 200 and fetched.content == past
    assert fetched.headers["content-type"] == "application/octet-stream"
    documented = schema["paths"]["/v1/brains/{brainId}/documents/read"]["get"]["responses"]
    assert {"200", "307"} <= set(documented)


def test_the_embedded_store_always_answers_with_the_bytes(tmp_path: Path) -> None:
    container = fake_container(tmp_path, read_redirect_bytes=LIMIT)
    brain = container.brains.create("Notes", slug="notes")
    large = b"c" * (8 * LIMIT)
    container.documents.write(brain, "large.md", large)

    with TestClient(create_app(container), base_url="http://localhost", follow_redirects=False) as client:
        answer = client.get(READ, params={"path": "large.md"})

    assert container.adapters.downloads is None
    assert answer.status_code == 200 and answer.content == large
