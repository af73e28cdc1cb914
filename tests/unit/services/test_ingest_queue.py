"""Large file ingests are queued as jobs and finish through the runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import NotFound
from cairn.domain.models import Brain, JobStatus
from cairn.ingest.extract import Extracted, extract_text
from cairn.services.ingest import service
from tests.fakes.container import fake_container

BIG = ("# Field manual\n\n" + "Rotate the tyres every ten thousand kilometres. " * 60).encode()


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path, ingest_queue_bytes=1024)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Manuals", slug="manuals")


def test_a_large_file_is_queued_then_ingested_by_the_job(container: Container, brain: Brain) -> None:
    queued = container.ingest.ingest_bytes(brain, BIG, name="manual.md")

    assert queued.status == "queued" and queued.job_id and queued.chunk_count == 0
    assert queued.path == "ingest/manual.md" and queued.document is None
    with pytest.raises(NotFound):
        container.documents.get(brain, "ingest/manual.md")

    assert container.jobs.run_pending() == 1
    job = container.jobs.status(queued.job_id)
    assert job.status is JobStatus.completed and job.result
    doc = container.documents.get(brain, "ingest/manual.md")
    assert doc.id == queued.document_id == job.result["document_id"]
    assert job.result["chunk_count"] == doc.chunk_count > 0
    assert container.search.search(brain, "rotate tyres").hits[0].document_id == doc.id
    assert not container.documents.blobs.exists(f"uploads/{brain.id}/{queued.hash}")


def test_small_files_are_ingested_at_once(container: Container, brain: Brain) -> None:
    result = container.ingest.ingest_bytes(brain, b"# Note\n\nShort.", name="note.md")
    assert result.status == "completed" and result.job_id is None and result.document is not None
    assert container.jobs.run_pending() == 0


def test_the_same_upload_again_is_the_same_job_then_reused(container: Container, brain: Brain) -> None:
    first = container.ingest.ingest_bytes(brain, BIG, name="manual.md")
    second = container.ingest.ingest_bytes(brain, BIG, name="manual.md")
    assert second.job_id == first.job_id and second.document_id == first.document_id
    container.jobs.run_pending()

    third = container.ingest.ingest_bytes(brain, BIG, name="manual.md")
    assert third.status == "completed" and third.reused and third.document_id == first.document_id
    assert container.jobs.run_pending() == 0


def test_a_failed_ingest_job_is_retried_by_asking_again(container: Container, brain: Brain) -> None:
    broken = b"%PDF-1.7\n" + b"\x00garbage" * 400
    first = container.ingest.ingest_bytes(brain, broken, name="broken.pdf")
    while container.jobs.run_pending():
        pass
    failed = container.jobs.status(first.job_id or "")
    assert failed.status is JobStatus.failed and failed.error
    assert container.documents.documents(brain) == []

    again = container.ingest.ingest_bytes(brain, broken, name="broken.pdf")
    assert again.status == "queued" and again.job_id != first.job_id


def test_the_cli_path_can_refuse_to_queue(container: Container, brain: Brain) -> None:
    result = container.ingest.ingest_bytes(brain, BIG, name="manual.md", queue=False)
    assert result.status == "completed" and result.chunk_count > 0


def test_a_small_file_of_many_sections_is_queued_when_chunks_decide(tmp_path: Path) -> None:
    """Bytes alone let 64 KiB of one-line FAQ entries (1,000 chunks, 1,000 embedding calls) be
    embedded inside an API call that must end in 29 s on AWS; the chunk count queues it."""
    container = fake_container(tmp_path, ingest_queue_bytes=64 * 1024, ingest_queue_chunks=160)
    brain = container.brains.create("FAQ", slug="faq")
    faq = "".join(f"## Q{n}. Is it open on day {n}?\n\nYes.\n\n" for n in range(200)).encode()
    prose = ("# Field manual\n\n" + "Rotate the tyres every ten thousand kilometres. " * 300).encode()
    assert len(faq) < 64 * 1024 and len(prose) < 64 * 1024

    queued = container.ingest.ingest_bytes(brain, faq, name="faq.md")
    inline = container.ingest.ingest_bytes(brain, prose, name="manual.md")

    assert queued.status == "queued" and queued.job_id
    assert inline.status == "completed" and 0 < inline.chunk_count <= 160
    assert container.jobs.run_pending() == 1
    assert container.documents.get(brain, "ingest/faq.md").chunk_count > 160
    embedded = fake_container(tmp_path / "embedded", ingest_queue_bytes=64 * 1024)  # no chunk rule
    assert embedded.ingest.ingest_bytes(embedded.brains.create("F"), faq, name="faq.md").status == "completed"


def test_a_plain_file_is_extracted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunk rule and the write read the same text: a JSON file was parsed and rendered twice."""
    container = fake_container(tmp_path, ingest_queue_bytes=64 * 1024, ingest_queue_chunks=160)
    brain = container.brains.create("Config", slug="config")
    calls: list[str] = []

    def counted(data: bytes, kind: str, filename: str = "", **limits: int) -> Extracted:
        calls.append(kind)
        return extract_text(data, kind, filename, **limits)

    monkeypatch.setattr(service, "extract_text", counted)
    result = container.ingest.ingest_bytes(brain, b'{"title": "Ports", "http": 8080}', name="ports.json")
    assert result.status == "completed" and calls == ["json"]
