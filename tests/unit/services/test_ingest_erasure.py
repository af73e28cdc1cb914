"""An ingest queued into an agent scope that is erased before it runs, or while it runs: nothing of
it is left in the scope, the queued bytes go, and the receipt's "completed" holds; on the embedded
job runner and on the state machine's steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.auth import access
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.sweep import index_sweeper
from cairn.config import Settings
from cairn.domain.errors import Forbidden, NotFound
from cairn.domain.models import Brain, JobStatus
from cairn.services.ingest.ingest_steps import StagedIngest
from cairn.services.ingest.service import ERASED_SCOPE
from tests.fakes.container import fake_container
from tests.unit.test_staged_ingest import Context, run_steps

PATH = "memory/agent/ghost/plan.md"
WORD = "velvetmoth"


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path, ingest_queue_bytes=16, chunk_target_chars=200)


def _queue(container: Container, brain: Brain, path: str = PATH) -> str:
    body = f"# Plan\n\nThe codeword is {WORD}; keep it to yourself.\n"
    result = container.ingest.ingest_bytes(brain, body.encode(), name="plan.md", path=path)
    assert result.status == "queued" and result.job_id
    return result.job_id


def _erase(container: Container, agent: str = "ghost") -> None:
    """The agent's scope erased; it holds a note (an erasure of a scope holding nothing is 404)."""
    with access.as_system():
        brain = container.brains.get("team")
        container.documents.write(brain, f"memory/agent/{agent}/old.md", b"An older note of the agent.")
        assert container.erasure.erase("agent_scope", agent).status == "completed"


def test_an_ingest_queued_before_its_scopes_erasure_writes_nothing(container: Container) -> None:
    brain = container.brains.create("Team", slug="team")
    job_id = _queue(container, brain)
    other = _queue(container, brain, "memory/agent/casper/plan.md")  # another agent's scope
    _erase(container)

    container.jobs.run_pending()

    failed = container.jobs.status(job_id)
    assert failed.status is JobStatus.failed and failed.error == ERASED_SCOPE
    assert container.jobs.status(other).status is JobStatus.completed
    with access.as_system():
        container.documents.erase(brain, "memory/agent/casper/plan.md")
    _nothing_left(container, brain)
    later = _queue(container, brain)  # queued after the erasure: the agent may write again
    container.jobs.run_pending()
    assert container.jobs.status(later).status is JobStatus.completed


def test_what_a_running_ingest_wrote_after_the_erasures_scans_is_erased(container: Container) -> None:
    brain = container.brains.create("Team", slug="team")
    job_id = _run_erased_meanwhile(container, brain)

    assert container.jobs.status(job_id).error == ERASED_SCOPE
    _nothing_left(container, brain)
    with access.as_system():  # erased as the erasure erases: no excerpt left for the next note
        later = container.documents.write(brain, "memory/agent/ghost/plan2.md", b"A later plan.")
    assert all(
        WORD not in (c.context or "")
        for c in container.adapters.chunks.get_chunks(brain.id, later.document.id)
    )


def test_an_erasure_in_one_brain_leaves_an_ingest_into_another_alone(container: Container) -> None:
    """The mark is the erased brains': another brain's (another tenant's) agent of that name
    writes on."""
    team = container.brains.create("Team", slug="team")
    other = container.brains.create("Other", slug="other")
    job_id = _queue(container, other)
    with access.as_system():
        container.documents.write(team, "memory/agent/ghost/old.md", b"An older note of the agent.")
        assert container.erasure.erase("agent_scope", "ghost", brains=["team"]).status == "completed"
    container.jobs.run_pending()
    assert container.jobs.status(job_id).status is JobStatus.completed


def test_the_same_file_sent_again_after_the_erasure_is_a_new_ingest(container: Container) -> None:
    brain = container.brains.create("Team", slug="team")
    doomed = _queue(container, brain)
    _erase(container)
    again = _queue(container, brain)  # the same bytes to the same path, asked after the erasure
    assert again != doomed
    container.jobs.run_pending()
    assert container.jobs.status(doomed).error == ERASED_SCOPE
    assert container.jobs.status(again).status is JobStatus.completed


def test_a_scope_holding_only_a_queued_ingest_is_erased_and_the_ingest_writes_nothing(
    container: Container,
) -> None:
    """Nothing stored in the scope yet, an ingest queued into it: the erasure is not 404 "nothing
    stored" (the ingest would then land), and the item status naming the path goes at once."""
    brain = container.brains.create("Team", slug="team")
    job_id = _queue(container, brain)
    with access.as_system():
        receipt = container.erasure.erase("agent_scope", "ghost")
    assert receipt.status == "completed" and receipt.removed["records"] >= 1
    assert container.ingest.status is not None and container.ingest.status.pending(brain.id) == []
    container.jobs.run_pending()
    assert container.jobs.status(job_id).error == ERASED_SCOPE
    _nothing_left(container, brain)


def test_any_subject_with_a_slash_names_no_agent_scope(container: Container) -> None:
    brain = container.brains.create("Team", slug="team")
    with access.as_system():
        container.documents.write(brain, "memory/agent/alice/notes/x.md", b"Alice's own note.")
        container.documents.write(brain, "memory/agent/alice/notes/y.md", b"Alice's other note.")
    _queue(container, brain, "memory/agent/alice/notes/z.md")
    with access.as_system(), pytest.raises(NotFound):
        container.erasure.erase("any", "alice/notes")  # not Alice's scope, nor a folder of it
    container.jobs.run_pending()
    with access.as_system():
        assert len(container.documents.documents(brain, "memory/agent/alice/")) == 3


@pytest.mark.parametrize("erased_before", ["validate", "finalize"])
def test_the_state_machines_steps_hold_to_the_erasure(container: Container, erased_before: str) -> None:
    brain = container.brains.create("Team", slug="team")
    job = container.jobs.status(_queue(container, brain))
    staged = StagedIngest(container.ingest, container.brains, container.adapters.clock, batch_size=2)
    ctx = Context()
    if erased_before == "validate":
        _erase(container)
        with pytest.raises(Forbidden):
            run_steps(staged, job)
    else:
        for name in ("validate", "extract", "chunk"):
            out = staged.steps().steps[name](job, ctx, {})
        for batch in out["batches"]:
            staged.index_batch(job, ctx, {"batch": batch})
        _erase(container)
        with pytest.raises(Forbidden):
            staged.finalize(job, ctx, {})
    failed = job.model_copy(update={"error": ERASED_SCOPE})
    staged.discard(failed, ctx.checkpoints())  # as the machine's cleanup
    _nothing_left(container, brain)


def _nothing_left(container: Container, brain: Brain) -> None:
    with access.as_system():
        assert [d.path for d in container.documents.documents(brain, "memory/")] == []
    assert container.search.search(brain, WORD, count_access=False).hits == []
    held = container.adapters.blobs.items  # type: ignore[attr-defined]
    assert not [k for k, v in held.items() if WORD.encode() in v], "the queued bytes are still held"
    assert container.ingest.status is not None  # no pending item names the erased scope's path
    assert [i.path for i in container.ingest.status.pending(brain.id) if i.path == PATH] == []


def test_the_refused_jobs_record_goes_at_the_next_sweep(container: Container) -> None:
    """The job finishes after the erasure forgot the brain's finished jobs, and its input names the
    erased scope's path: the sweep after it forgets it (another agent's job is kept)."""
    brain = container.brains.create("Team", slug="team")
    job_id = _queue(container, brain)
    other = _queue(container, brain, "memory/agent/casper/plan.md")
    _erase(container)
    container.jobs.run_pending()
    assert container.jobs.status(job_id).input["path"] == PATH  # refused, held until the sweep
    index_sweeper(container).tick()
    with pytest.raises(NotFound):
        container.jobs.status(job_id)
    assert container.jobs.status(other).status is JobStatus.completed
    assert container.job_log.forget_marked() == 0  # its mark went with it


def test_what_a_running_ingest_wrote_leaves_nothing_in_the_embedded_stores_files(tmp_path: Path) -> None:
    """The take-back scrubs the stores' files as the erasure does (freed pages and write-ahead logs
    held the text the job wrote), on the embedded store."""
    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data, ingest_queue_bytes=16))
    brain = container.brains.create("Team", slug="team")
    job_id = _run_erased_meanwhile(container, brain)
    assert container.jobs.status(job_id).error == ERASED_SCOPE
    held = [p.name for p in data.rglob("*") if p.is_file() and "blobs" not in p.parts]
    assert held and not [p for p in data.rglob("*") if p.is_file() and WORD.encode() in p.read_bytes()]


def _run_erased_meanwhile(container: Container, brain: Brain) -> str:
    """Queue an ingest into the agent scope and run it, the erasure running whole just before the
    job's write commits (and the ingest as it was after); the job's id."""
    job_id = _queue(container, brain)
    ingest_bytes = container.ingest.ingest_bytes

    def erased_meanwhile(*args: Any, **kwargs: Any) -> Any:
        _erase(container)
        return ingest_bytes(*args, **kwargs)

    container.ingest.ingest_bytes = erased_meanwhile  # type: ignore[method-assign]
    try:
        container.jobs.run_pending()
    finally:
        container.ingest.ingest_bytes = ingest_bytes  # type: ignore[method-assign]
    return job_id
