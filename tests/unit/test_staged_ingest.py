"""StagedIngest's steps on the fakes, with a JobContext standing in for the Step Functions one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import Conflict, PayloadTooLarge
from cairn.domain.models import Job
from cairn.services.documents.indexing import MAX_CHUNKS
from cairn.services.ingest.ingest_steps import StagedIngest
from cairn.services.ingest.inputs import INGEST_JOB
from tests.fakes.container import fake_container


class Context:
    """Checkpoints in a dict; `superseded` makes progress raise, as a failed job's context does."""

    def __init__(self) -> None:
        self.saved: dict[str, Any] = {}
        self.superseded = False

    def progress(self, fraction: float, message: str | None = None) -> None:
        if self.superseded:
            raise Conflict("job attempt no longer owns the job")

    def checkpoint(self, key: str, value: Any = True) -> None:
        self.saved[key] = value

    def checkpoints(self) -> dict[str, Any]:
        return dict(self.saved)


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path, ingest_queue_bytes=64, chunk_target_chars=200)


def queued(container: Container) -> tuple[Job, StagedIngest]:
    brain = container.brains.create("Docs")
    body = "\n\n".join(f"## Part {i}\n\nRadiator valve {i} needs bleeding every autumn." for i in range(6))
    result = container.ingest.ingest_bytes(brain, f"# Manual\n\n{body}\n".encode(), name="manual.md")
    assert result.job_id
    return container.jobs.status(result.job_id), StagedIngest(
        container.ingest, container.brains, container.adapters.clock, batch_size=2
    )


def run_steps(staged: StagedIngest, job: Job) -> dict[str, Any]:
    """Every step of a staged ingest in order, as the state machine runs them; finalize's result."""
    ctx = Context()
    for name in ("validate", "extract", "chunk"):
        out = staged.steps().steps[name](job, ctx, {})
    for batch in out["batches"]:
        staged.index_batch(job, ctx, {"batch": batch})
    return dict(staged.finalize(job, ctx, {}))


def test_the_steps_in_order_leave_the_document_indexed_and_nothing_staged(container: Container) -> None:
    job, staged = queued(container)
    result = run_steps(staged, job)

    doc = container.documents.record_by_id(container.brains.get(job.brain_id or ""), result["document_id"])
    chunks = container.adapters.chunks.get_chunks(doc.brain_id, doc.id)
    assert result["chunk_count"] == doc.chunk_count == len(chunks) >= 4 and all(c.active for c in chunks)
    assert not [k for k in container.adapters.blobs.items if k.startswith("uploads/")]  # type: ignore[attr-defined]
    assert job.kind == INGEST_JOB


def test_a_batch_that_finishes_after_the_job_failed_takes_its_chunks_back(container: Container) -> None:
    job, staged = queued(container)
    ctx = Context()
    for name in ("validate", "extract", "chunk"):
        staged.steps().steps[name](job, ctx, {})
    ctx.superseded = True  # another batch ran out of retries; the discard may already have run

    with pytest.raises(Conflict):
        staged.index_batch(job, ctx, {"batch": 0})

    document_id = ctx.saved["chunked"]["document_id"]
    assert container.adapters.chunks.get_chunks(job.brain_id or "", document_id) == []


def test_a_text_of_more_chunks_than_a_document_holds_fails_at_the_chunk_step(container: Container) -> None:
    """Refused before anything is staged or committed (100,000 chunks and more passed the index's
    activation limit after the record was committed, leaving search on the old version)."""
    brain = container.brains.create("Docs")
    sections = "".join(f"## {n}\n\nok\n\n" for n in range(MAX_CHUNKS + 1))
    result = container.ingest.ingest_bytes(brain, sections.encode(), name="faq.md")
    assert result.job_id
    job = container.jobs.status(result.job_id)
    staged = StagedIngest(container.ingest, container.brains, container.adapters.clock, batch_size=2)
    ctx = Context()
    for name in ("validate", "extract"):
        staged.steps().steps[name](job, ctx, {})
    with pytest.raises(PayloadTooLarge, match="at most 20000"):
        staged.steps().steps["chunk"](job, ctx, {})
    staged.discard(job, ctx.checkpoints())
    assert container.documents.repo.get(brain.id, "ingest/faq.md") is None
    assert not [k for k in container.adapters.blobs.items if "/staging/" in k]  # type: ignore[attr-defined]
