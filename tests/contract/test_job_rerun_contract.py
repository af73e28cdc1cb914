"""Every job kind but ingest (tests/unit/services/test_ingest_job_rerun.py) run a second time from
the same input and the checkpoints its first attempt wrote, as the engine runs a job whose
checkpoint or outcome write was lost (at least once): the second run changes nothing a user can see,
on every record store. Extraction: no second note, confirmation or variant line, the watermark where
the first left it. Consolidation: no survivor folded twice, no archive entry twice, no summary or
promotion written again, whichever step's checkpoint was lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, DocumentSource, Job, MemoryFacet, MemoryType
from cairn.ports.facts import FactDraft
from cairn.ports.records import RecordStore
from cairn.services.documents.inputs import DocumentInput
from cairn.services.memory.consolidation import STEPS
from cairn.services.memory.extraction import Said
from cairn.services.memory.fact_memory import Provenance
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.facts import FakeFactExtractor
from tests.unit.test_staged_ingest import Context


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def container(tmp_path: Path, records: RecordStore, clock: FakeClock) -> Iterator[Container]:
    adapters = fake_adapters(clock=clock, extractor=FakeFactExtractor())
    adapters.records = records
    yield build_container(Settings(data_dir=tmp_path / "data"), adapters)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Memory", slug="memory")


def seen(container: Container, brain: Brain) -> list[tuple[Any, ...]]:
    """Every record of the brain's documents, deleted ones too, with its bytes and chunks."""
    out = []
    for doc in container.documents.repo.list(brain.id, ""):
        body = container.documents.content(doc) if doc.deleted_at is None else b""
        out.append(
            (
                doc.path,
                doc.id,
                doc.version,
                doc.checksum_sha256,
                doc.deleted_reason,
                doc.replaced_by,
                sorted((k, str(v)) for k, v in doc.metadata.items()),
                doc.memory.model_dump_json() if doc.memory else None,
                body,
            )
        )
    return sorted(out)


def again(first: Context) -> Context:
    """The rerun's context: the checkpoints the first attempt wrote."""
    ctx = Context()
    ctx.saved = dict(first.saved)
    return ctx


# -- extraction --------------------------------------------------------------------------------

SAID = [
    Said("user", "I moved to Lisbon in March."),
    Said("assistant", "Nice, how do you like it?"),
    Said("user", "I love the tiles. I work at a bakery now."),
]


def session_job(container: Container, brain: Brain) -> tuple[str, Job]:
    session = container.sessions.create(brain)
    _, job = container.extraction.submit_session(brain, session.id, SAID, actor_id="ana")
    assert job is not None
    return session.id, container.jobs.status(job.id)


def test_a_session_extraction_run_again_after_its_outcome_was_lost_changes_nothing(
    container: Container, brain: Brain
) -> None:
    session_id, job = session_job(container, brain)
    first = Context()
    container.extraction.run(job, first)
    once = seen(container, brain)
    assert len(once) == 3

    result = container.extraction.run(job, again(first))

    assert seen(container, brain) == once
    assert result["facts"] == 0 and container.sessions.session(brain, session_id).extracted_upto == 3


def test_a_session_extraction_cut_short_before_its_watermark_stores_each_fact_once(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, job = session_job(container, brain)
    first = Context()
    with monkeypatch.context() as m:  # the process dies once the facts are stored
        m.setattr(container.sessions, "update", lambda *a, **k: faults._raise())
        with pytest.raises(faults.InjectedFault):
            container.extraction.run(job, first)
    once = seen(container, brain)
    assert len(once) == 3 and container.sessions.session(brain, session_id).extracted_upto == 0

    result = container.extraction.run(job, again(first))

    assert seen(container, brain) == once
    assert result["unchanged"] == 3 and result["created"] == result["confirmed"] == 0
    assert container.sessions.session(brain, session_id).extracted_upto == 3


def test_a_transcript_extraction_run_again_changes_nothing(container: Container, brain: Brain) -> None:
    _, job = container.extraction.submit_transcript(brain, SAID, actor_id="ana")
    job = container.jobs.status(job.id)
    first = Context()
    container.extraction.run(job, first)
    once = seen(container, brain)
    assert len(once) == 4  # the transcript and its three facts

    result = container.extraction.run(job, again(first))

    assert seen(container, brain) == once
    assert result["unchanged"] == 3 and result["created"] == result["confirmed"] == 0


# -- consolidation -----------------------------------------------------------------------------


def fact(container: Container, brain: Brain, text: str, origin: str, source: str) -> None:
    draft = FactDraft(text=text, source_ids=(source,), category="personal")
    container.extraction.facts.store(brain, draft, Provenance(origin, draft.source_ids, "fake"))


def episode(container: Container, brain: Brain, name: str) -> None:
    info = DocumentInput(
        title=f"Episode {name}",
        source=DocumentSource.reflect,
        metadata={"kind": "episode"},
        memory=MemoryFacet(type=MemoryType.event, importance=0.2, sector="episodic"),
    )
    body = f"# Episode {name}\n\nWe talked about {name} and fixed the {name} pipeline.\n".encode()
    container.documents.write(brain, f"memory/global/episodes/{name}.md", body, info)


def untidy(container: Container, brain: Brain, clock: FakeClock) -> None:
    """Something for every step: twins to merge, a fact to promote, stale episodes, a folder."""
    episode(container, brain, "alpha")
    episode(container, brain, "beta")
    clock.advance(40 * 86400)
    fact(container, brain, "Caroline moved from Sweden four years ago", "ses_a", "msg_1")
    fact(container, brain, "Caroline moved from Sweden four years ago", "ses_b", "msg_2")
    container.documents.write(
        brain,
        "memory/global/caroline-sweden.md",
        b"Caroline moved here from Sweden four years ago",
        DocumentInput(
            metadata={"kind": "fact", "origins": "ses_c", "source_ids": "msg_3", "confirmations": 1}
        ),
    )
    fact(container, brain, "Jon owns a dance studio", "ses_a", "msg_4")
    fact(container, brain, "Jon owns a dance studio", "ses_d", "msg_5")
    fact(container, brain, "Ana plays the cello", "ses_a", "msg_6")


def consolidation_job(container: Container, brain: Brain) -> Job:
    return container.jobs.status(container.consolidation.queue(brain).id)


@pytest.mark.parametrize("lost", STEPS)
def test_a_consolidation_run_again_from_before_a_lost_checkpoint_changes_nothing(
    container: Container, brain: Brain, clock: FakeClock, lost: str
) -> None:
    untidy(container, brain, clock)
    job = consolidation_job(container, brain)
    first = Context()
    result = container.consolidation.run(job, first)
    assert result["merge"]["merged"] == 1 and result["promote"]["promoted"] >= 1
    assert result["prune"]["pruned"] == 2 and result["summaries"]["written"] >= 1
    once = seen(container, brain)

    kept = STEPS[: STEPS.index(lost)]  # the checkpoints written before the lost one
    ctx = Context()
    ctx.saved = {step: first.saved[step] for step in kept}
    container.consolidation.run(job, ctx)

    assert seen(container, brain) == once


def test_a_consolidation_cut_short_inside_a_merge_folds_each_twin_once(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    untidy(container, brain, clock)
    job = consolidation_job(container, brain)
    with faults.armed("consolidation.merged"), pytest.raises(faults.InjectedFault):
        container.consolidation.run(job, Context())  # the survivor written, its twin not retired

    container.consolidation.run(job, Context())
    once = seen(container, brain)
    survivors = [row for row in once if row[0].startswith("memory/global/caroline-moved")]
    assert len(survivors) == 1
    body = survivors[0][-1].decode()
    assert body.count("Caroline moved here from Sweden four years ago") == 1, body

    container.consolidation.run(job, Context())
    assert seen(container, brain) == once


class Rewording(FakeFactExtractor):
    """A model that words its second answer otherwise: "ana said: I ..." becomes "ana: I ..."."""

    def extract(self, utterances: Any) -> list[FactDraft]:
        drafts = super().extract(utterances)
        if len(self.calls) == 1:
            return drafts
        return [FactDraft(**{**d.__dict__, "text": d.text.replace(" said:", ":")}) for d in drafts]


def test_an_extraction_whose_drafts_were_lost_asks_again_and_a_reworded_answer_adds_nothing(
    container: Container, brain: Brain
) -> None:
    container.extraction.extractor = Rewording()
    _, job = container.extraction.submit_transcript(brain, SAID, actor_id="ana")
    job = container.jobs.status(job.id)
    container.extraction.run(job, Context())
    once = seen(container, brain)

    result = container.extraction.run(job, Context())  # no checkpoint: the model is asked again

    assert seen(container, brain) == once
    assert result["unchanged"] == 3 and result["created"] == result["confirmed"] == 0


@pytest.mark.parametrize("by", ["deleted", "merged"])
def test_a_transcript_extraction_run_again_brings_back_no_fact_removed_since(
    container: Container, brain: Brain, by: str
) -> None:
    _, job = container.extraction.submit_transcript(brain, SAID, actor_id="ana")
    job = container.jobs.status(job.id)
    first = Context()
    container.extraction.run(job, first)
    facts = [d for d in container.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact"]
    gone, kept = facts[0], facts[1]
    if by == "deleted":  # someone deleted a fact the job stored before the job ran again
        container.documents.delete(brain, gone.path)
    else:  # or a consolidation folded it into another
        container.documents.retire(brain, gone.path, why="merged", replaced_by=kept.id)
    once = seen(container, brain)

    result = container.extraction.run(job, again(first))

    assert seen(container, brain) == once
    assert result["created"] == result["confirmed"] == 0 and gone.path not in result["paths"]


def test_a_session_extraction_cut_short_brings_back_no_fact_deleted_before_it_ran_again(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, job = session_job(container, brain)
    first = Context()
    with monkeypatch.context() as m:
        m.setattr(container.sessions, "update", lambda *a, **k: faults._raise())
        with pytest.raises(faults.InjectedFault):
            container.extraction.run(job, first)
    gone = container.documents.documents(brain, "memory/")[0]
    container.documents.delete(brain, gone.path)
    once = seen(container, brain)

    container.extraction.run(job, again(first))

    assert seen(container, brain) == once
    assert container.sessions.session(brain, session_id).extracted_upto == 3
