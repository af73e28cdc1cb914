"""A staged ingest (the queued ingest on AWS, services/ingest/ingest_steps.py) tells the
dropped-chunk hooks (services/documents/dropped_chunks.py) only when its activation left the
document fewer chunks than the version it replaced: each hook reads what it keeps (the concept
reach record), so telling on every staged ingest cost one read apiece."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document
from cairn.services.ingest.ingest_steps import StagedIngest
from cairn.services.mnemosyne.concept_reach import Reach
from tests.fakes.container import fake_container
from tests.unit.test_staged_ingest import run_steps


@pytest.fixture
def c(tmp_path: Path) -> Container:
    return fake_container(tmp_path, ingest_queue_bytes=64, chunk_target_chars=200)


def _manual(parts: int, word: str = "bleeding") -> bytes:
    body = "\n\n".join(f"## Part {i}\n\nRadiator valve {i} needs {word} every autumn." for i in range(parts))
    return f"# Manual\n\n{body}\n".encode()


def _ingest(c: Container, brain: Brain, data: bytes) -> Document:
    result = c.ingest.ingest_bytes(brain, data, name="manual.md")
    assert result.status == "queued" and result.job_id
    staged = StagedIngest(c.ingest, c.brains, c.adapters.clock, batch_size=2)
    outcome = run_steps(staged, c.jobs.status(result.job_id))
    doc = c.documents.repo.stored_by_id(outcome["document_id"])
    assert doc is not None
    return doc


def _watched(c: Container) -> tuple[list[str], list[int]]:
    """The documents whose reach record the dropped-chunk hooks read, and the counts they were
    told kept (the ingest's own linker reads the record too: not counted)."""
    reads: list[str] = []
    told: list[int] = []
    telling = [False]
    real_read, dropped = c.concepts.reach.read, c.documents.indexer.dropped
    real_tell = dropped.tell

    def read(brain_id: str, document_id: str) -> Reach:
        if telling[0]:
            reads.append(document_id)
        return real_read(brain_id, document_id)

    def tell(doc: Document, kept: int) -> None:
        told.append(kept)
        telling[0] = True
        try:
            real_tell(doc, kept)
        finally:
            telling[0] = False

    c.concepts.reach.read = read  # type: ignore[method-assign]
    dropped.tell = tell  # type: ignore[method-assign]
    return reads, told


def test_a_queued_ingest_that_drops_no_chunks_reads_no_reach(c: Container) -> None:
    brain = c.brains.create("Docs")
    reads, told = _watched(c)
    first = _ingest(c, brain, _manual(6))  # a new document: nothing to drop
    again = _ingest(c, brain, _manual(6, "draining"))  # as many chunks as before
    assert first.id == again.id and again.chunk_count == first.chunk_count > 1
    assert (reads, told) == ([], []), (reads, told)


def test_a_queued_ingest_to_fewer_chunks_tells_the_hooks(c: Container) -> None:
    brain = c.brains.create("Docs")
    longer = _ingest(c, brain, _manual(6))
    reads, told = _watched(c)
    shorter = _ingest(c, brain, _manual(2))
    assert 0 < shorter.chunk_count < longer.chunk_count
    assert told == [shorter.chunk_count] and set(reads) == {longer.id}
