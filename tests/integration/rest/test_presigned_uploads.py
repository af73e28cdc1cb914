"""Uploads past API Gateway's 6 MB: presign, POST the file to S3 (moto's server, over HTTP),
ingest by key. The S3 blob store is the only signer; the embedded server answers 404."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from cairn.services.ingest.ingest_steps import StagedIngest
from tests.fakes.container import fake_adapters, fake_container
from tests.integration.aws.moto_http import post_upload, s3_over_http
from tests.integration.rest.helpers import assert_problem
from tests.unit.test_staged_ingest import run_steps

MiB = 1024 * 1024
UPLOADS = "/v1/brains/{}/documents/uploads"
INGEST = "/v1/brains/{}/documents/ingest/upload"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3BlobStore]:
    with s3_over_http(monkeypatch) as blobs:
        yield blobs


def s3_container(tmp_path: Path, store: S3BlobStore, **settings: Any) -> Container:
    adapters = fake_adapters()
    adapters.blobs = store
    adapters.uploads = store
    return build_container(Settings(data_dir=tmp_path / "data", **settings), adapters)


def upload(client: TestClient, brain: str, name: str, data: bytes) -> str:
    ticket = client.post(UPLOADS.format(brain), json={"file_name": name, "size": len(data)})
    assert ticket.status_code == 200, ticket.text
    body = ticket.json()
    sent = post_upload(body["upload"]["url"], body["upload"]["fields"], data, name)
    assert sent.status_code == 204, sent.text
    key: str = body["key"]
    return key


@contextmanager
def queued_upload(
    tmp_path: Path, store: S3BlobStore
) -> Iterator[tuple[Container, TestClient, str, Response]]:
    """A 2 MiB markdown upload ingested to docs/big.md above a 1 MiB queueing threshold (202)."""
    container = s3_container(tmp_path, store, ingest_queue_bytes=1 * MiB)
    container.brains.create("Notes", slug="notes")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        key = upload(client, "notes", "big.md", big_markdown(2 * MiB, "wombat lighthouse"))
        queued = client.post(INGEST.format("notes"), json={"key": key, "path": "docs/big.md"})
        assert queued.status_code == 202, queued.text
        yield container, client, key, queued


def big_markdown(size: int, phrase: str) -> bytes:
    paragraph = b"Cairn keeps notes for agents; this paragraph pads the upload past the limit.\n\n"
    body = paragraph * (size // len(paragraph))
    return b"# Field report\n\n" + body + f"\n{phrase}\n".encode()


def test_a_7_mb_file_goes_presign_upload_ingest_and_is_searchable(tmp_path: Path, store: S3BlobStore) -> None:
    container = s3_container(tmp_path, store, max_content_chars=8_000_000)
    brain = container.brains.create("Notes", slug="notes")
    data = big_markdown(7 * MiB, "quokka zeppelin harmonica")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        ticket = client.post(UPLOADS.format("notes"), json={"file_name": "../field report.md"}).json()
        assert ticket["key"].startswith(f"uploads/{brain.id}/upl_")
        assert ticket["key"].endswith("/field report.md")
        assert ticket["expires_at"].endswith("+00:00")
        key = upload(client, "notes", "report.md", data)
        ingested = client.post(INGEST.format("notes"), json={"key": key})
        assert ingested.status_code == 200, ingested.text
        assert ingested.json()["status"] == "completed"
        assert ingested.json()["path"] == "ingest/report.md"
        hits = client.post("/v1/brains/notes/search", json={"query": "quokka zeppelin harmonica"}).json()[
            "hits"
        ]
        assert hits and hits[0]["path"] == "ingest/report.md"
        assert store.size(key) is None  # the upload is dropped once ingested


def test_above_the_queueing_threshold_the_ingest_is_a_job_which_spends_the_upload(
    tmp_path: Path, store: S3BlobStore
) -> None:
    """The job reads a copy of its own: the upload is spent once queued, so asking again for
    another path is 404 (it was two jobs, and the first to finish dropped the second's bytes)."""
    with queued_upload(tmp_path, store) as (container, client, key, queued):
        assert queued.json()["status"] == "queued"
        assert store.size(key) is None
        again = client.post(INGEST.format("notes"), json={"key": key, "path": "team-b/big.md"})
        assert again.status_code == 404 and again.json()["code"] == "not_found"
        assert container.jobs.run_pending() == 1
        assert container.jobs.status(queued.json()["job_id"]).status.value == "completed"
        hits = client.post("/v1/brains/notes/search", json={"query": "wombat lighthouse"}).json()["hits"]
        assert {hit["path"] for hit in hits} == {"docs/big.md"}
    left = store.client.list_objects_v2(Bucket=store.bucket, Prefix="uploads/")
    assert left.get("KeyCount", 0) == 0  # the job dropped its copy


def test_the_ingest_state_machines_steps_read_and_drop_the_upload(tmp_path: Path, store: S3BlobStore) -> None:
    container = s3_container(tmp_path, store, ingest_queue_bytes=64, chunk_target_chars=200)
    brain = container.brains.create("Notes", slug="notes")
    body = "\n\n".join(f"## Part {i}\n\nBoiler valve {i} is bled each spring." for i in range(6))
    with TestClient(create_app(container), base_url="http://localhost") as client:
        key = upload(client, "notes", "manual.md", f"# Manual\n\n{body}\n".encode())
        queued = client.post(INGEST.format("notes"), json={"key": key})
        assert queued.status_code == 202, queued.text
    job = container.jobs.status(queued.json()["job_id"])
    staged = StagedIngest(container.ingest, container.brains, container.adapters.clock, batch_size=2)
    assert run_steps(staged, job)["path"] == "ingest/manual.md"
    assert container.documents.repo.get(brain.id, "ingest/manual.md") is not None
    left = store.client.list_objects_v2(Bucket=store.bucket, Prefix=f"uploads/{brain.id}/")
    assert left.get("KeyCount", 0) == 0


def test_foreign_missing_and_oversized_keys_are_refused_and_change_nothing(
    tmp_path: Path, store: S3BlobStore
) -> None:
    container = s3_container(tmp_path, store)
    notes = container.brains.create("Notes", slug="notes")
    container.brains.create("Other", slug="other")
    too_big = f"uploads/{notes.id}/upl_big/big.md"
    store.put(too_big, b"x" * (25 * MiB + 1))
    with TestClient(create_app(container), base_url="http://localhost") as client:
        foreign = upload(client, "other", "theirs.md", b"# theirs\n")
        refused = [
            (foreign, 404, "not_found"),
            (f"uploads/{notes.id}/upl_none/missing.md", 404, "not_found"),
            (f"uploads/{notes.id}/staging/job_1/content", 404, "not_found"),  # not a presigned key
            (too_big, 413, "file_too_large"),
            (f"uploads/{notes.id}/upl_x/../../{foreign}", 404, "not_found"),
        ]
        for key, status, code in refused:
            assert_problem(client.post(INGEST.format("notes"), json={"key": key}), status, code)
        asked = client.post(UPLOADS.format("notes"), json={"file_name": "a.md", "size": 25 * MiB + 1})
        assert_problem(asked, 413, "file_too_large")
        for name in ("theirs.md", "missing.md", "content", "big.md"):
            stat = client.get("/v1/brains/notes/documents/stat", params={"path": f"ingest/{name}"})
            assert stat.status_code == 404, name
    assert container.documents.repo.get(notes.id, "ingest/theirs.md") is None
    assert store.size(foreign) == len(b"# theirs\n")
    assert store.size(too_big) == 25 * MiB + 1


def test_the_embedded_server_offers_no_presigned_uploads(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    container.brains.create("Notes", slug="notes")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        body = assert_problem(
            client.post(UPLOADS.format("notes"), json={"file_name": "a.md"}), 404, "not_found"
        )
        assert "ingest/file" in body["detail"]
        assert_problem(
            client.post(INGEST.format("notes"), json={"key": "uploads/x/upl_1/a.md"}), 404, "not_found"
        )


def test_a_queued_ingest_whose_copy_expired_fails_in_words_naming_no_internal_key(
    tmp_path: Path, store: S3BlobStore
) -> None:
    with queued_upload(tmp_path, store) as (container, client, _key, queued):
        for kept in store.client.list_objects_v2(Bucket=store.bucket, Prefix="uploads/")["Contents"]:
            store.delete(kept["Key"])  # as the expiry sweep does to a job left queued for a week
        container.jobs.run_pending()
        job = client.get(f"/v1/jobs/{queued.json()['job_id']}").json()
    assert job["status"] == "failed"
    assert "uploaded file is gone" in job["error"] and "uploads/" not in job["error"], job["error"]
