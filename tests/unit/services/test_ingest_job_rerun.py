"""A queued ingest's job run a second time, as it is when its attempt's checkpoint or outcome was
lost (the job store stayed locked through the engine's close: the job waits out its lease and a
worker takes it again): at least once, with no second effect a user can see. The rerun stores the
same document at the same path with the same chunks, and leaves the brain's counts as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain, Job
from tests.fakes.container import fake_container
from tests.unit.test_staged_ingest import Context


class LostCheckpoint(Context):
    """The attempt's checkpoint refused as a store locked past its lease refuses it."""

    def checkpoint(self, key: str, value: object = True) -> None:
        raise Unavailable("the job store stayed locked")


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path, ingest_queue_bytes=64, chunk_target_chars=200)


def _queued(container: Container) -> tuple[Brain, Job]:
    brain = container.brains.create("Docs")
    body = "\n\n".join(f"## Part {i}\n\nRadiator valve {i} needs bleeding every autumn." for i in range(6))
    result = container.ingest.ingest_bytes(brain, f"# Manual\n\n{body}\n".encode(), name="manual.md")
    assert result.status == "queued" and result.job_id
    return brain, container.jobs.status(result.job_id)


def _seen(container: Container, brain: Brain) -> tuple[object, ...]:
    paths = [f.path for f in container.documents.list(brain, recursive=True) if not f.is_dir]
    documents = [container.documents.get(brain, path) for path in paths]
    chunks = container.adapters.chunks
    return (
        sorted((d.path, d.id, d.checksum_sha256, d.version) for d in documents),
        chunks.count(brain.id),
        chunks.held(brain.id),
    )


@pytest.mark.parametrize("lost", ["checkpoint", "outcome"])
def test_an_ingest_job_run_again_after_its_write_was_lost_stores_nothing_twice(
    container: Container, lost: str
) -> None:
    brain, job = _queued(container)
    first = LostCheckpoint() if lost == "checkpoint" else Context()
    if lost == "checkpoint":
        with pytest.raises(Unavailable):
            container.ingest.run_job(job, first)
    else:
        container.ingest.run_job(job, first)
    once = _seen(container, brain)
    assert once[1] and len(once[0]) == 1  # type: ignore[arg-type]

    again = Context()
    again.saved = dict(first.saved)  # the checkpoints that were written, none if it was lost
    result = container.ingest.run_job(job, again)

    assert _seen(container, brain) == once
    assert result["document_id"] == once[0][0][1] and result["chunk_count"] == once[1]  # type: ignore[index]
