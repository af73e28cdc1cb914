"""Uploads a week old are removed on the embedded store, as the upload bucket's lifecycle removes
them on AWS (services/documents/upload_expiry.py): the bytes a failed queued ingest keeps for its
retry, a job's working folder a killed process left, a presigned upload never ingested. Younger
ones stay, other brains' and documents' bytes are not touched, and asking again for a failed
ingest stores its bytes anew, so a retry's week starts then."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, JobStatus
from cairn.ports.clock import SystemClock
from cairn.services.documents import upload_expiry
from cairn.services.documents.blob_keys import uploads_folder
from cairn.services.documents.index_sweeper import IndexSweeper
from tests.support.shapes import embedded

DAY = 86400.0
NOT_A_PDF = b"%PDF-1.7 this is no PDF at all " * 40  # its ingest fails at extraction


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    data = tmp_path / "data"
    adapters = embedded(data)
    clock = SystemClock()
    jobs = SqliteJobRunner(data / "jobs.sqlite3", clock)
    adapters = replace(adapters, clock=clock, jobs=jobs)
    yield build_container(Settings(data_dir=data, ingest_queue_bytes=512), adapters)
    jobs.close()


def _blob(container: Container, key: str) -> Path:
    return Path(container.adapters.blobs.root, *key.split("/"))  # type: ignore[attr-defined]


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    for p in [*path.rglob("*"), path] if path.is_dir() else [path]:
        os.utime(p, (then, then))


def _failed_ingest(container: Container, brain: Brain) -> Path:
    queued = container.ingest.ingest_bytes(brain, NOT_A_PDF, name="scan.pdf", path="scans/scan.pdf")
    assert queued.status == "queued" and queued.job_id
    container.jobs.run_pending()
    assert container.jobs.status(queued.job_id).status is JobStatus.failed
    (upload,) = _uploads(container, brain)
    return upload


def test_uploads_a_week_old_go_and_younger_ones_stay(container: Container) -> None:
    brain = container.brains.create("Scans", slug="scans")
    other = container.brains.create("Other", slug="other")
    note = container.documents.write(brain, "notes/a.md", b"# A\n\nkept").document
    kept_upload = _failed_ingest(container, brain)
    old_upload = _blob(container, f"{uploads_folder(brain.id)}0123abcd")
    killed_job = _blob(container, f"{uploads_folder(brain.id)}staging/job_killed/content")
    live_job = _blob(container, f"{uploads_folder(brain.id)}staging/job_live/content")
    presigned = _blob(container, f"{uploads_folder(brain.id)}upl_old/report.pdf")
    others = _blob(container, f"{uploads_folder(other.id)}4567cdef")
    for path in (old_upload, killed_job, live_job, presigned, others):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"bytes")
    for path in (old_upload, killed_job.parent, presigned.parent):
        _age(path, upload_expiry.EXPIRY_S + DAY)
    _age(kept_upload, upload_expiry.EXPIRY_S - DAY)

    assert container.documents.expire_uploads() == 3

    assert not old_upload.exists() and not killed_job.parent.exists() and not presigned.parent.exists()
    assert kept_upload.exists() and live_job.exists() and others.exists()
    assert container.documents.read(brain, "notes/a.md") == b"# A\n\nkept"
    assert container.adapters.blobs.exists(note.blob_key)
    assert container.documents.expire_uploads() == 0


def _uploads(container: Container, brain: Brain) -> list[Path]:
    return [p for p in _blob(container, uploads_folder(brain.id)).iterdir() if p.is_file()]


def test_asking_again_for_a_failed_ingest_starts_its_week_anew(container: Container) -> None:
    brain = container.brains.create("Scans", slug="scans")
    upload = _failed_ingest(container, brain)
    _age(upload, 6 * DAY)

    again = container.ingest.ingest_bytes(brain, NOT_A_PDF, name="scan.pdf", path="scans/scan.pdf")

    assert again.status == "queued"
    (fresh,) = _uploads(container, brain)  # the retry's own bytes; the failed one's went
    assert fresh != upload and not upload.exists() and fresh.read_bytes() == NOT_A_PDF
    assert container.documents.expire_uploads(older_than_s=5 * DAY) == 0  # stored just now


def test_a_retry_queued_while_the_sweep_runs_keeps_its_bytes(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep lists a failed ingest's week-old bytes; before it deletes them, the caller asks
    again and is answered `queued`. The retry's bytes are its own, so what the sweep listed is not
    what the retry reads (they were one file, which the sweep removed under the retry)."""
    brain = container.brains.create("Scans", slug="scans")
    upload = _failed_ingest(container, brain)
    _age(upload, upload_expiry.EXPIRY_S + 3600)
    blobs = container.adapters.blobs
    listing = blobs.files  # type: ignore[attr-defined]
    retries: list[str | None] = []

    def files_then_retry(prefix: str) -> list[tuple[str, float]]:
        listed = list(listing(prefix))
        if not retries:
            again = container.ingest.ingest_bytes(brain, NOT_A_PDF, name="scan.pdf", path="scans/scan.pdf")
            retries.append(again.job_id if again.status == "queued" else None)
        return listed

    monkeypatch.setattr(blobs, "files", files_then_retry)
    container.documents.expire_uploads()

    (job_id,) = retries
    assert job_id is not None
    assert blobs.get(container.jobs.status(job_id).input["upload_key"]) == NOT_A_PDF


def test_the_same_bytes_queued_for_two_paths_are_both_ingested(container: Container) -> None:
    """Two jobs: the first to finish dropped the bytes both named, and the second failed."""
    brain = container.brains.create("Team", slug="team")
    body = b"# Report\n\n" + b"The quarterly numbers are in. " * 40
    first = container.ingest.ingest_bytes(brain, body, name="report.md", path="team-a/report.md")
    second = container.ingest.ingest_bytes(brain, body, name="report.md", path="team-b/report.md")
    assert (first.status, second.status) == ("queued", "queued") and first.job_id != second.job_id

    container.jobs.run_pending()

    for queued in (first, second):
        assert queued.job_id and container.jobs.status(queued.job_id).status is JobStatus.completed
    assert container.documents.read(brain, "team-b/report.md") == body
    assert _uploads(container, brain) == []  # each job dropped its own bytes


def test_asking_again_while_queued_keeps_one_copy_of_the_bytes(container: Container) -> None:
    brain = container.brains.create("Team", slug="team")
    body = b"# Report\n\n" + b"The quarterly numbers are in. " * 40
    first = container.ingest.ingest_bytes(brain, body, name="report.md", path="team-a/report.md")
    again = container.ingest.ingest_bytes(brain, body, name="report.md", path="team-a/report.md")

    assert again.job_id == first.job_id and len(_uploads(container, brain)) == 1
    container.jobs.run_pending()
    assert container.documents.read(brain, "team-a/report.md") == body and _uploads(container, brain) == []


def test_the_index_sweep_expires_uploads_once_an_hour(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = container.brains.create("Scans", slug="scans")
    upload = _failed_ingest(container, brain)
    _age(upload, upload_expiry.EXPIRY_S + DAY)
    calls: list[int] = []
    expire = container.documents.expire_uploads
    monkeypatch.setattr(container.documents, "expire_uploads", lambda: calls.append(expire()) or 0)
    sweeper = IndexSweeper(container.documents)

    sweeper.tick()
    sweeper.tick()

    assert calls == [1] and not upload.exists()  # the first tick, then not again within the hour
