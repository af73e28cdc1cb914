"""Fact extraction: session and transcript modes, provenance, dedupe, watermark, failures."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import Brain, DocumentSource, JobStatus
from cairn.ports.generator import GenerationError
from cairn.services.memory.extraction import Said
from tests.fakes.facts import FakeFactExtractor


def facts(container: Container, brain: Brain) -> list:
    return [d for d in container.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact"]


def stored_metadata(container: Container, session_id: str) -> list[dict]:
    return [m.metadata for m in container.sessions.repo.messages(session_id)]


def test_session_mode_marks_all_but_the_last_and_extracts_in_a_job(
    container: Container, brain: Brain
) -> None:
    session = container.sessions.create(brain)
    said = [
        Said("user", "I moved to Lisbon in March."),
        Said("assistant", "Nice, how do you like it?"),
        Said("user", "I love the tiles. I work at a bakery now."),
    ]
    messages, job = container.extraction.submit_session(brain, session.id, said, actor_id=None)

    assert [m.content for m in messages] == [s.content for s in said]
    assert job is not None and job.kind == "extract"
    assert [md["skip_extract"] for md in stored_metadata(container, session.id)] == [True, True, False]
    assert facts(container, brain) == []  # nothing until the job runs

    assert container.jobs.run_pending() == 1
    notes = {d.title: d for d in facts(container, brain)}
    assert set(notes) == {
        "user said: I moved to Lisbon in March.",
        "user said: I love the tiles.",
        "user said: I work at a bakery now.",
    }
    lisbon = notes["user said: I moved to Lisbon in March."]
    assert lisbon.source is DocumentSource.extract
    assert lisbon.path.startswith("memory/global/")
    assert lisbon.metadata["origins"] == session.id
    assert lisbon.metadata["source_ids"] == messages[0].id
    assert lisbon.metadata["extracted_by"] == "fake"
    assert lisbon.metadata["confirmations"] == 1
    assert container.documents.read(brain, lisbon.path) == b"user said: I moved to Lisbon in March."
    assert container.sessions.get(brain, session.id)[0].extracted_upto == 3
    hits = container.search.search(brain, "bakery").hits
    assert hits and hits[0].document_id == notes["user said: I work at a bakery now."].id


def test_each_run_covers_only_messages_since_the_watermark(
    container: Container, brain: Brain, extractor: FakeFactExtractor
) -> None:
    session = container.sessions.create(brain)
    first, _ = container.extraction.submit_session(brain, session.id, [Said("user", "I have a dog.")])
    container.jobs.run_pending()
    second = container.sessions.append(brain, session.id, "user", "I have a cat.")
    container.jobs.run_pending()

    assert extractor.calls == [[first[0].id], [second.id]]
    assert len(facts(container, brain)) == 2


def test_skip_extract_on_the_last_message_queues_nothing(container: Container, brain: Brain) -> None:
    session = container.sessions.create(brain)
    container.sessions.append(brain, session.id, "user", "I have a dog.", metadata={"skip_extract": True})

    assert container.jobs.run_pending() == 0
    assert facts(container, brain) == []


def test_the_same_fact_from_another_session_is_confirmed_not_duplicated(
    container: Container, brain: Brain
) -> None:
    a = container.sessions.create(brain)
    b = container.sessions.create(brain)
    container.extraction.submit_session(brain, a.id, [Said("user", "I run every Saturday morning.")])
    container.jobs.run_pending()
    (only,) = facts(container, brain)
    msg, _ = container.extraction.submit_session(brain, b.id, [Said("user", "I run every Saturday morning!")])
    container.jobs.run_pending()

    (again,) = facts(container, brain)
    assert again.id == only.id
    assert again.metadata["confirmations"] == 2
    assert again.metadata["origins"] == f"{a.id},{b.id}"
    assert msg[0].id in str(again.metadata["source_ids"]).split(",")
    assert again.memory is not None and again.memory.strength == 2.0


def test_a_reworded_fact_is_recognised_as_the_same(container: Container, brain: Brain) -> None:
    a = container.sessions.create(brain)
    b = container.sessions.create(brain)
    container.extraction.submit_session(brain, a.id, [Said("user", "I adopted a grey cat named Luna.")])
    container.jobs.run_pending()
    container.extraction.submit_session(
        brain, b.id, [Said("user", "I adopted a grey cat named Luna last year.")]
    )
    container.jobs.run_pending()

    (fact,) = facts(container, brain)
    assert fact.metadata["confirmations"] == 2
    body = container.documents.read(brain, fact.path).decode()
    assert body == (
        "user said: I adopted a grey cat named Luna.\n\nAlso recorded as:\n"
        "- user said: I adopted a grey cat named Luna last year.\n"
    )


def test_different_facts_stay_apart(container: Container, brain: Brain) -> None:
    session = container.sessions.create(brain)
    container.extraction.submit_session(
        brain, session.id, [Said("user", "I like green tea. I like black coffee.")]
    )
    container.jobs.run_pending()
    assert len(facts(container, brain)) == 2


def test_an_actor_gets_its_own_namespace(container: Container, brain: Brain) -> None:
    session = container.sessions.create(brain)
    container.extraction.submit_session(
        brain, session.id, [Said("user", "I prefer tabs.")], actor_id="Coder Bot"
    )
    container.jobs.run_pending()

    (fact,) = facts(container, brain)
    assert fact.path.startswith("memory/agent/coder-bot/")
    assert fact.metadata["actor_id"] == "Coder Bot"
    assert container.search.search(brain, "tabs", scope="agent").hits


def test_transcript_mode_stores_a_transcript_document_then_extracts(
    container: Container, brain: Brain
) -> None:
    said = [Said("user", "I am allergic to peanuts."), Said("assistant", "Noted. I will remember that.")]
    doc, job = container.extraction.submit_transcript(brain, said, actor_id=None)

    assert doc.source is DocumentSource.extract and doc.path.startswith("transcripts/")
    assert job.input["document_id"] == doc.id
    body = container.documents.read(brain, doc.path).decode()
    assert "I am allergic to peanuts." in body and "**assistant**" in body
    container.jobs.run_pending()

    by_title = {d.title: d for d in facts(container, brain)}
    allergy = by_title["user said: I am allergic to peanuts."]
    assert allergy.metadata["origins"] == doc.id
    assert allergy.metadata["source_ids"] == f"{doc.id}#1"
    assert by_title["assistant said: I will remember that."].metadata["source_ids"] == f"{doc.id}#2"


def test_a_transcript_deleted_before_its_job_runs_is_not_mined(
    container: Container, brain: Brain, extractor: FakeFactExtractor
) -> None:
    doc, job = container.extraction.submit_transcript(
        brain, [Said("user", "My sister is allergic to peanuts.")]
    )
    container.documents.delete(brain, doc.path)
    container.jobs.run_pending()

    done = container.jobs.status(job.id)
    assert done.status is JobStatus.failed and "deleted" in (done.error or "")
    assert extractor.calls == [] and facts(container, brain) == []


def test_an_extractor_failure_fails_the_job_and_writes_nothing(container: Container, brain: Brain) -> None:
    container.extraction.extractor = FakeFactExtractor(fail_with=GenerationError("bad_response", "not JSON"))
    session = container.sessions.create(brain)
    container.extraction.submit_session(brain, session.id, [Said("user", "I have a boat.")])
    while container.jobs.run_pending():
        pass

    job = container.extraction.queue_session(brain, session, 1)  # the same key: the failed job
    assert job.status is JobStatus.failed and "not JSON" in (job.error or "")
    assert facts(container, brain) == []
    assert container.sessions.get(brain, session.id)[0].extracted_upto == 0


def test_a_rerun_reuses_the_checkpointed_drafts(
    container: Container, brain: Brain, extractor: FakeFactExtractor
) -> None:
    session = container.sessions.create(brain)
    container.extraction.submit_session(brain, session.id, [Said("user", "I have two kids.")])
    job = container.extraction.queue_session(brain, session, 1)
    ctx = _Ctx()
    container.extraction.run(job, ctx)
    container.sessions.update(brain, session.id, lambda s: s.model_copy(update={"extracted_upto": 0}))
    result = container.extraction.run(job, ctx)  # as if the first attempt died before finishing

    assert len(extractor.calls) == 1
    assert result["facts"] == 1 and result["unchanged"] == 1
    assert len(facts(container, brain)) == 1


@pytest.mark.parametrize("count", [0, 501])
def test_message_counts_outside_1_to_500_are_refused(container: Container, brain: Brain, count: int) -> None:
    session = container.sessions.create(brain)
    with pytest.raises(InvalidInput):
        container.extraction.submit_session(brain, session.id, [Said("user", "x")] * count)
    with pytest.raises(InvalidInput):
        container.extraction.submit_transcript(brain, [Said("user", "x")] * count)
    assert container.sessions.get(brain, session.id)[1] == []
    assert container.documents.documents(brain) == []


def test_a_closed_session_takes_no_messages(container: Container, brain: Brain) -> None:
    session = container.sessions.create(brain)
    container.sessions.close(brain, session.id)
    with pytest.raises(Conflict):
        container.extraction.submit_session(brain, session.id, [Said("user", "I have a dog.")])
    assert container.jobs.run_pending() == 0


class _Ctx:
    def __init__(self) -> None:
        self.saved: dict = {}

    def progress(self, fraction: float, message: str | None = None) -> None:
        pass

    def checkpoint(self, key: str, value: object = True) -> None:
        self.saved[key] = value

    def checkpoints(self) -> dict:
        return dict(self.saved)


def test_a_fact_the_user_already_wrote_down_is_not_stored_again(container: Container, brain: Brain) -> None:
    note = container.ingest.remember(brain, "Reminder: user said: I am allergic to peanuts. Carry the pen.")
    session = container.sessions.create(brain)
    container.extraction.submit_session(brain, session.id, [Said("user", "I am allergic to peanuts.")])
    container.jobs.run_pending()

    assert facts(container, brain) == []
    assert container.documents.get_by_id(brain, note.id).version == note.version
