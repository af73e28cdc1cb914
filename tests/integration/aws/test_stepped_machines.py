"""The ingest and consolidation state machines (infra/statemachines/ingest.asl.json,
consolidate.asl.json) executed by moto, every Lambda task routed in-process to the real job task
handler on a core container: one state per step, Map over chunk batches, retries, and Catch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.adapters.aws.sfn_idempotency import IDEMPOTENCY_PARTITION
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.functions import job_tasks
from cairn.config import Settings
from cairn.domain.errors import NotFound
from cairn.domain.models import Brain, JobStatus
from cairn.entrypoints.aws_lambda import jobs_handler
from cairn.ports.embedder import Vectors
from tests.contract.aws_storage import fake_credentials
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.embedder import HashingEmbedder
from tests.support.index_check import index_problems
from tests.support.moto_lambda import Invocation, route_lambda
from tests.support.sfn_runner import TASK_FUNCTION, MotoJobs, moto_job_runner

POISON = "poisonword"


class FlakyEmbedder(HashingEmbedder):
    """Fails on any text holding POISON, `failures` times in a row (forever when negative)."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.failures = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.failures and any(POISON in t for t in texts):
            self.failures -= 1
            raise RuntimeError("the embedding service is unavailable")
        return super().embed(texts)


@dataclass
class Stack:
    core: Container
    jobs: MotoJobs
    blobs: MemoryBlobStore
    embedder: FlakyEmbedder
    calls: list[Invocation]
    settings: Settings

    def steps(self) -> list[str]:
        return [str(c.event.get("step") or c.event["action"]) for c in self.calls]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    fake_credentials(monkeypatch)
    clock = FakeClock()
    machines = ("job", "ingest", "consolidate")
    with moto_job_runner(clock, records="dynamodb", machines=machines, run_timeout_s=60) as mj:
        embedder = FlakyEmbedder(64)
        adapters = replace(fake_adapters(clock=clock), records=mj.records, jobs=mj.runner, embedder=embedder)
        settings = Settings(
            data_dir=tmp_path,
            table="cairn-jobs",  # the step tasks' Powertools idempotency records go there
            ingest_queue_bytes=512,
            ingest_batch_chunks=2,
            chunk_target_chars=200,
        )
        core = build_container(settings, adapters)
        assert isinstance(adapters.blobs, MemoryBlobStore)
        with route_lambda({TASK_FUNCTION: jobs_handler(lambda: job_tasks(core, settings))}) as calls:
            yield Stack(core, mj, adapters.blobs, embedder, calls, settings)


def manual(sections: int, extra: str = "") -> bytes:
    body = "\n\n".join(
        f"## Part {i}\n\nRadiator valve {i} needs bleeding every autumn before the heating starts. {extra}"
        for i in range(sections)
    )
    return f"# Manual\n\n{body}\n".encode()


def queue(stack: Stack, brain: Brain, data: bytes, name: str = "manual.md") -> str:
    queued = stack.core.ingest.ingest_bytes(brain, data, name=name)
    assert queued.status == "queued" and queued.job_id
    return queued.job_id


def staging_keys(stack: Stack) -> list[str]:
    return [k for k in stack.blobs.items if "/staging/" in k]


def found(stack: Stack, brain: Brain, text: str) -> list[str]:
    """Paths of the hits whose chunk holds the query's words (the fake embedder's vector leg
    returns every chunk, related or not)."""
    words = text.lower().split()
    hits = stack.core.search.search(brain, text).hits
    return [h.path for h in hits if all(w in h.content.lower() for w in words)]


def test_a_queued_ingest_runs_one_state_per_step_and_maps_over_batches(stack: Stack) -> None:
    brain = stack.core.brains.create("Docs", slug="docs")
    job_id = queue(stack, brain, manual(6))
    stack.core.jobs.run_pending()

    job = stack.core.jobs.status(job_id)
    assert job.status is JobStatus.completed and job.result, job.error
    doc = stack.core.documents.get(brain, "ingest/manual.md")
    assert job.result["document_id"] == doc.id and job.result["chunk_count"] == doc.chunk_count
    assert doc.chunk_count >= 4 and job.result["embedded_count"] == doc.chunk_count
    batches = -(-doc.chunk_count // 2)
    steps = stack.steps()
    assert steps[:4] == ["begin", "validate", "extract", "chunk"] and steps[-1] == "finalize"
    assert sorted(steps[4:-1]) == ["index"] * batches
    assert sorted(c.event["item"]["batch"] for c in stack.calls if c.event.get("step") == "index") == list(
        range(batches)
    )
    chunks = stack.core.adapters.chunks.get_chunks(brain.id, doc.id)
    assert len(chunks) == doc.chunk_count and all(c.active for c in chunks)
    assert found(stack, brain, "radiator valve")[0] == "ingest/manual.md"
    assert staging_keys(stack) == [] and not any(k.startswith("uploads/") for k in stack.blobs.items)
    # Every step ran once, under Powertools idempotency: one completed record each.
    client = stack.jobs.records.client  # type: ignore[attr-defined]
    records = client.query(
        TableName="cairn-jobs",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": IDEMPOTENCY_PARTITION}},
    )["Items"]
    assert len(records) == len([s for s in steps if s != "begin"])


def test_until_finalize_search_sees_the_old_version_and_nothing_of_the_new(stack: Stack) -> None:
    brain = stack.core.brains.create("Docs", slug="docs")
    stack.core.ingest.ingest_bytes(brain, b"# Manual\n\nThe boiler is serviced in June.\n", name="manual.md")
    seen: list[list[str]] = []
    handler = jobs_handler(lambda: job_tasks(stack.core, stack.settings))

    def watching(event: dict[str, Any], context: Any) -> Any:
        if event.get("step") == "finalize":  # every batch is indexed by now, staged
            seen.append(found(stack, brain, "radiator valve"))
            seen.append(found(stack, brain, "boiler serviced"))
        return handler(event, context)

    with route_lambda({TASK_FUNCTION: watching}) as stack.calls:
        job_id = queue(stack, brain, manual(6))
        stack.core.jobs.run_pending()

    assert stack.core.jobs.status(job_id).status is JobStatus.completed
    assert seen == [[], ["ingest/manual.md"]]
    assert found(stack, brain, "radiator valve") == ["ingest/manual.md"]
    assert found(stack, brain, "boiler serviced") == []
    doc = stack.core.documents.get(brain, "ingest/manual.md")
    assert stack.core.adapters.chunks.count(brain.id) == doc.chunk_count


def test_a_batch_that_fails_is_retried_with_backoff_and_then_succeeds(stack: Stack) -> None:
    brain = stack.core.brains.create("Docs", slug="docs")
    stack.embedder.failures = 2
    job_id = queue(stack, brain, manual(6, extra=f"Part of the {POISON} list."))
    stack.core.jobs.run_pending()

    job = stack.core.jobs.status(job_id)
    assert job.status is JobStatus.completed, job.error
    assert len(stack.jobs.waits) == 2  # two JobAttemptFailed retries, waits jittered under the cap
    assert all(0 <= w <= 60 for w in stack.jobs.waits)


def test_a_batch_that_keeps_failing_lands_in_catch_and_nothing_half_indexed_remains(stack: Stack) -> None:
    brain = stack.core.brains.create("Docs", slug="docs")
    stack.core.ingest.ingest_bytes(brain, b"# Manual\n\nThe boiler is serviced in June.\n", name="manual.md")
    before = stack.core.documents.get(brain, "ingest/manual.md")
    stack.embedder.failures = -1
    job_id = queue(stack, brain, manual(6, extra=f"Part of the {POISON} list."))
    stack.core.jobs.run_pending()

    job = stack.core.jobs.status(job_id)
    assert job.status is JobStatus.failed
    assert job.error == "RuntimeError: the embedding service is unavailable"
    index_calls = [c for c in stack.calls if c.event.get("step") == "index"]
    assert len(index_calls) >= 4  # each batch: the first try and three retries
    # the Map's other iterations may still be indexing when Catch runs fail (moto runs them in
    # threads), so fail need not be the last call; it runs once, and nothing is finalized
    assert stack.steps().count("fail") == 1 and "finalize" not in stack.steps()
    after = stack.core.documents.get(brain, "ingest/manual.md")
    assert (after.id, after.version) == (before.id, before.version)
    assert after.checksum_sha256 == before.checksum_sha256
    chunks = stack.core.adapters.chunks.get_chunks(brain.id, before.id)
    assert [c.id for c in chunks] == [f"chk_{before.id.removeprefix('doc_')}_0"]  # staged chunks discarded
    assert found(stack, brain, "boiler serviced") == ["ingest/manual.md"]
    assert found(stack, brain, "radiator valve") == []
    assert staging_keys(stack) == []


def test_a_step_that_cannot_succeed_is_not_retried(stack: Stack) -> None:
    brain = stack.core.brains.create("Docs", slug="docs")
    queued = stack.core.ingest.ingest_bytes(brain, manual(6), name="manual.md")
    upload = next(k for k in stack.blobs.items if k.startswith("uploads/"))
    stack.blobs.delete(upload)  # the bucket's lifecycle expired it before the job ran
    stack.core.jobs.run_pending()

    job = stack.core.jobs.status(queued.job_id or "")
    assert job.status is JobStatus.failed and job.error and "uploaded file is gone" in job.error
    assert stack.steps() == ["begin", "validate", "fail"] and stack.jobs.waits == []
    with pytest.raises(NotFound):
        stack.core.documents.get(brain, "ingest/manual.md")


def test_consolidation_runs_one_state_per_step(stack: Stack) -> None:
    brain = stack.core.brains.create("Team", slug="team")
    for note in ("Ana likes jazz.", "Ana plays the cello.", "Ana lives in Porto."):
        stack.core.ingest.remember(brain, note)
    job = stack.core.consolidation.queue(brain)
    stack.core.jobs.run_pending()

    done = stack.core.jobs.status(job.id)
    assert done.status is JobStatus.completed and done.result, done.error
    assert set(done.result) == {"merge", "promote", "prune", "summaries"}
    assert done.result["summaries"]["folders"] == 1
    assert stack.steps() == ["begin", "merge", "promote", "prune", "summaries"]
    assert "Ana plays the cello." in stack.core.documents.read(brain, "memory/global/_summary.md").decode()


def test_a_consolidation_step_that_keeps_failing_is_retried_then_caught(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = stack.core.brains.create("Team", slug="team")
    stack.core.ingest.remember(brain, "Ana likes jazz.")

    def broken(*args: object) -> dict[str, Any]:
        raise RuntimeError("prune could not read the access log")

    monkeypatch.setattr(stack.core.consolidation, "prune", broken)
    job = stack.core.consolidation.queue(brain)
    stack.core.jobs.run_pending()

    failed = stack.core.jobs.status(job.id)
    assert failed.status is JobStatus.failed
    assert failed.error == "RuntimeError: prune could not read the access log"
    assert stack.steps() == ["begin", "merge", "promote"] + ["prune"] * 4 + ["fail"]
    assert len(stack.jobs.waits) == 3
    execution = stack.jobs.sfn.list_executions(stateMachineArn=stack.jobs.runner._machines["consolidate"])
    assert [e["status"] for e in execution["executions"]] == ["FAILED"]
    assert failed.result is None
    assert "merge" in stack.jobs.runner._jobs.checkpoints(job.id)  # done steps stay done


def test_a_batch_stopped_after_its_chunks_are_staged_is_run_again_and_leaves_one_copy(stack: Stack) -> None:
    """The index task stopped right after it upserted its batch inactive (`ingest.staged`: the
    Lambda timed out or died there) is retried; its redo writes the same ids, so the document is
    whole, each chunk once, and no staged chunk or staging blob is left."""
    brain = stack.core.brains.create("Docs", slug="docs")
    stopped: list[str] = []

    def stop() -> None:
        stopped.append("ingest.staged")
        raise faults.InjectedFault("the task stopped here")

    with faults.armed("ingest.staged", at=2, action=stop):
        job_id = queue(stack, brain, manual(6))
        stack.core.jobs.run_pending()
    assert stopped  # the point was reached: a test of a point never reached proves nothing

    job = stack.core.jobs.status(job_id)
    assert job.status is JobStatus.completed, job.error
    index_calls = [c for c in stack.calls if c.event.get("step") == "index"]
    assert len(index_calls) == 4  # three batches, one of them twice
    doc = stack.core.documents.get(brain, "ingest/manual.md")
    chunks = stack.core.adapters.chunks.get_chunks(brain.id, doc.id)
    assert len(chunks) == len({c.ordinal for c in chunks}) == len({c.id for c in chunks})
    assert sorted(c.ordinal for c in chunks) == list(range(len(chunks)))
    assert index_problems(stack.core) == []
    assert found(stack, brain, "radiator valve 5") == ["ingest/manual.md"]
    assert staging_keys(stack) == []
