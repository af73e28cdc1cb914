"""The core's jobs on Step Functions (moto runs job.asl.json, its Lambda task routed in-process to
the real job task handler): extraction, queued ingest and scheduled consolidation complete."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from unittest.mock import ANY

import pytest

from cairn import faults
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.functions import job_tasks
from cairn.config import Settings
from cairn.domain.models import JobStatus, MemoryType
from cairn.entrypoints.aws_lambda import jobs_handler
from cairn.faults import InjectedFault
from cairn.services.documents.index_sweeper import GRACE_S
from cairn.services.memory.extraction import Said
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.models import NewMemory
from cairn.services.thoughtmcp.rows import rows_pk
from tests.contract.aws_storage import fake_credentials
from tests.events.apigw import LambdaContext
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.support.index_check import index_problems
from tests.support.moto_lambda import route_lambda
from tests.support.sfn_runner import TASK_FUNCTION, moto_job_runner

TASK_CTX = LambdaContext(900_000)
"""A job task invocation's context with its whole 900 s ahead."""


@pytest.fixture
def container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    fake_credentials(monkeypatch)
    clock = FakeClock()
    with moto_job_runner(clock, records="dynamodb") as mj:
        adapters = replace(fake_adapters(clock=clock), records=mj.records, jobs=mj.runner)
        settings = Settings(data_dir=tmp_path, ingest_queue_bytes=512)
        c = build_container(settings, adapters)
        # The task Lambda is the real job task function's handler, on this container.
        with route_lambda({TASK_FUNCTION: jobs_handler(lambda: job_tasks(c, settings))}):
            yield c


def test_extraction_runs_as_a_step_functions_execution(container: Container) -> None:
    brain = container.brains.create("Team", slug="team")
    session = container.sessions.create(brain)
    container.extraction.submit_session(brain, session.id, [Said("user", "I moved to Porto in 2021.")])
    container.jobs.run_pending()

    facts = [d for d in container.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact"]
    assert facts and facts[0].metadata["origins"] == session.id
    assert container.sessions.get(brain, session.id)[0].extracted_upto == 1


def test_a_large_ingest_is_queued_and_completed_by_step_functions(container: Container) -> None:
    brain = container.brains.create("Docs", slug="docs")
    queued = container.ingest.ingest_bytes(
        brain, b"# Manual\n\n" + b"Bleed the radiators yearly. " * 40, name="m.md"
    )
    assert queued.status == "queued" and queued.job_id
    container.jobs.run_pending()

    job = container.jobs.status(queued.job_id)
    assert (
        job.status is JobStatus.completed and job.result and job.result["document_id"] == queued.document_id
    )
    assert container.search.search(brain, "radiators").hits[0].document_id == queued.document_id


def test_the_schedule_action_queues_one_consolidation_per_brain(container: Container) -> None:
    for name in ("A", "B"):
        brain = container.brains.create(name)
        for note in ("Ana likes jazz.", "Ana plays the cello.", "Ana lives in Porto."):
            container.ingest.remember(brain, note)
    handler = jobs_handler(lambda: job_tasks(container, Settings()))

    queued = handler({"action": "schedule"}, LambdaContext())["queued"]
    again = handler({"action": "schedule"}, LambdaContext())["queued"]
    container.jobs.run_pending()

    assert len(queued) == 2 and again == queued
    for job_id in queued:
        job = container.jobs.status(job_id)
        assert job.status is JobStatus.completed and job.result, (job.attempts, job.error)
        assert job.result["summaries"]["folders"] == 1, (job.attempts, job.result)
        brain = container.brains.get(job.brain_id or "")
        assert "Ana plays the cello." in container.documents.read(brain, "memory/global/_summary.md").decode()


def test_the_sweep_action_indexes_what_a_stopped_writer_committed(container: Container) -> None:
    """A Lambda dies between a document's commit and its index writes: the scheduled sweep (a
    minute on) indexes it, and leaves alone an intent young enough to be a writer still at work."""
    brain = container.brains.create("Team", slug="team")
    with faults.armed("documents.committed"), pytest.raises(InjectedFault):
        container.documents.write(brain, "notes/tide.md", b"# Tide\n\nHigh water at Porto is 14:05.")
    handler = jobs_handler(lambda: job_tasks(container, Settings()))
    too_young = {"settled": 0, "mended": 0}  # the intent is too young to be abandoned
    assert handler({"action": "sweep"}, TASK_CTX) == too_young
    assert container.search.search(brain, "high water Porto").hits == []
    assert isinstance(container.adapters.clock, FakeClock)
    container.adapters.clock.advance(GRACE_S + 1)

    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 1, "mended": 0}
    assert container.search.search(brain, "high water Porto").hits[0].path == "notes/tide.md"
    assert index_problems(container) == []


def test_the_sweep_action_gives_a_brain_made_mid_deploy_its_pointers(container: Container) -> None:
    """The previous release's code, still answering while a deploy switches over, makes a brain
    without the pointers its tenant's listing reads: the next sweep writes them."""
    from cairn.auth import access
    from cairn.auth.principal import READ, SCOPES, Principal, Via
    from cairn.services import brain_pointers

    owner = Principal("acme", "ops", frozenset(SCOPES), Via.api_key)
    with access.acting_as(owner):
        brain = container.brains.create("Made mid-deploy", slug="mid-deploy")
    container.adapters.records.delete(brain_pointers.tenant_pk("acme"), f"brain#{brain.id}")
    with access.acting_as(owner, READ):
        assert container.brains.list() == []
    handler = jobs_handler(lambda: job_tasks(container, Settings()))

    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 0, "mended": 1}

    with access.acting_as(owner, READ):
        assert [b.id for b in container.brains.list()] == [brain.id]
    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 0, "mended": 0}


def test_the_sweep_action_links_a_memory_whose_writer_stopped_after_its_commit(container: Container) -> None:
    """A Lambda dies between a typed memory's commit and its entity links: the scheduled sweep (a
    minute on) indexes it and makes its links (services/links/pending.py)."""
    brain = container.brains.create("Team", slug="team")
    memory = MemoryInput(
        type=MemoryType.event, content="The tide gauge was recalibrated.", client_id="port-trust"
    )
    with faults.armed("documents.indexed"), pytest.raises(InjectedFault):
        container.memories.store(brain, memory)
    handler = jobs_handler(lambda: job_tasks(container, Settings()))
    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 0, "mended": 0}  # too young
    assert isinstance(container.adapters.clock, FakeClock)
    container.adapters.clock.advance(GRACE_S + 1)

    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 2, "mended": 0}  # indexed, linked
    assert container.entities.get(brain, "port-trust").mention_count == 1
    assert list(container.pending_links.pending()) == []


class RunningOut(LambdaContext):
    """A job task invocation's context whose time left falls by `per_step_s` with each step of the
    memory counts' build (as if each took that long)."""

    def __init__(self, per_step_s: float, left_s: float = 900.0) -> None:
        super().__init__()
        self.left_s = left_s
        self.per_step_s = per_step_s

    def get_remaining_time_in_millis(self) -> int:
        return int(self.left_s * 1000)


def test_the_sweep_action_stops_before_the_invocation_ends_and_the_next_resumes(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's chores take no more than the invocation has: with each build step of a brain's
    memory counts taking 50 s, the sweep stops starting steps with less than 60 s left, answers
    in time (cut short, the pointers' mend left for the next), and the next sweep carries the build
    on from where it stopped to its end."""
    from cairn.entrypoints.aws_lambda import SWEEP_MARGIN_S
    from cairn.services.repositories import documents_pk

    brain = container.brains.create("Team", slug="team")
    for n in range(100):
        container.documents.write(brain, f"memories/fact/{n:03d}.md", f"Pump {n} runs at 3 bar.".encode())
    counts, pk = container.documents.repo.counts, documents_pk(brain.id)
    container.adapters.records.delete(pk, "memory-counts")  # as a brain written before the counts
    monkeypatch.setattr(counts, "step_records", 5)  # 20 steps to build
    context = RunningOut(per_step_s=50)
    step = counts.step
    steps: list[str | None] = []

    def timed_step(pk: str, **kwargs: object) -> bool:
        context.left_s -= context.per_step_s
        done = step(pk, **kwargs)  # type: ignore[arg-type]
        held = counts.held(pk) or {}
        steps.append(held.get("after"))
        return done

    monkeypatch.setattr(counts, "step", timed_step)
    handler = jobs_handler(lambda: job_tasks(container, Settings()))

    answer = handler({"action": "sweep"}, context)
    assert answer == {"settled": 0, "mended": 0, "cut_short": True}
    assert 0 <= context.left_s < SWEEP_MARGIN_S  # stopped in time, after the step that crossed the margin
    assert len(steps) == 17 and counts.read(pk) is None  # 850 s of steps: the build not done
    stopped_at = steps[-1]
    assert stopped_at == "doc#memories/fact/084.md"

    steps.clear()
    assert handler({"action": "sweep"}, RunningOut(per_step_s=0)) == {"settled": 0, "mended": 0}
    assert len(steps) == 3  # the 15 records left, from the one after where it stopped
    assert counts.read(pk) == counts.recount(pk) and counts.times_built(pk)


def test_the_sweep_action_says_what_it_left_to_do(container: Container) -> None:
    """Counts `over` (the hourly recount not due) are said in the sweep's answer, which the function
    logs; once the recount is due and fits, nothing is left to say."""
    from cairn.ports.records import Item
    from cairn.services.documents.memory_counts import RETRY_OVER_S
    from cairn.services.repositories import documents_pk

    brain = container.brains.create("Team", slug="team")
    container.documents.write(brain, "memories/fact/pump.md", b"The pump runs at 4 bar.")
    now = container.documents.repo.counts.now()
    container.adapters.records.put(Item(documents_pk(brain.id), "memory-counts", {"over": True, "at": now}))
    handler = jobs_handler(lambda: job_tasks(container, Settings()))

    assert handler({"action": "sweep"}, TASK_CTX) == {
        "settled": 0,
        "mended": 0,
        "maintenance": {
            "counts_over": 1,
            "counts_building": 0,
            "entries_building": 0,
            "deletions_settling": 0,
            "concept_reach_to_do": 0,
            "concept_reach_done": 1,
            "image_refs_to_do": 0,
            "image_refs_done": 1,
            "brains": {"counts_over": [brain.id]},
            "swept_at": ANY,  # the fake clock moves on each read: the tick's time
        },
    }
    assert isinstance(container.adapters.clock, FakeClock)
    container.adapters.clock.advance(RETRY_OVER_S)
    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 0, "mended": 0}


def test_the_sweep_action_finishes_a_forget_stopped_between_its_bytes_and_its_record(
    container: Container,
) -> None:
    """A Lambda dies in a hard forget after its memory's bytes went and before its record did: the
    scheduled sweep (a minute on) finishes the erase (services/erasure/interrupted.py)."""
    brain = thought_brain(container.brains, None, create=True)
    said = NewMemory("The keeper logged the fog at six.", "u", "s", "semantic")
    memory_id = container.thoughts.remember(brain, said)["memoryId"]
    with faults.armed("documents.bytes_erased"), pytest.raises(InjectedFault):
        container.thoughts.forget(brain, memory_id, "u")
    handler = jobs_handler(lambda: job_tasks(container, Settings()))
    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 0, "mended": 0}  # too young
    assert container.documents.repo.get_by_id(memory_id) is not None
    assert isinstance(container.adapters.clock, FakeClock)
    container.adapters.clock.advance(GRACE_S + 1)

    assert handler({"action": "sweep"}, TASK_CTX) == {"settled": 1, "mended": 0}
    assert container.documents.repo.get_by_id(memory_id) is None
    assert container.adapters.chunks.get_chunks(brain.id, memory_id) == []
    assert container.adapters.records.get(rows_pk(brain.id, "u"), memory_id) is None
    assert list(container.pending_links.pending()) == []
