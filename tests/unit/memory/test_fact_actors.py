"""Facts of different actors stay apart, and an erasure of one actor takes everything drawn from
them: actors whose names share a folder (`user/42` and `user:42`) never have their words merged
into each other's notes, and the folder's summary (which quotes them) goes with the actor."""

from __future__ import annotations

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document
from cairn.ports.facts import FactDraft
from cairn.services.memory.fact_memory import Provenance


def fact(container: Container, brain: Brain, text: str, actor: str, origin: str = "ses_a") -> Document:
    draft = FactDraft(
        text=text, source_ids=(f"msg_{abs(hash((text, actor))) % 10_000}",), category="personal"
    )
    return container.extraction.facts.store(
        brain, draft, Provenance(origin, draft.source_ids, "fake", actor)
    ).document


def texts(container: Container, brain: Brain) -> dict[str, str]:
    return {
        d.path: container.documents.read(brain, d.path).decode()
        for d in container.documents.documents(brain, "memory/")
    }


def test_actors_sharing_a_folder_keep_their_own_notes(container: Container, brain: Brain) -> None:
    mine = fact(container, brain, "My sister is allergic to peanuts.", "user/42")
    theirs = fact(container, brain, "My sister is allergic to peanuts since 2019.", "user:42")
    same_words = fact(container, brain, "My sister is allergic to peanuts.", "user:42")

    assert mine.path != theirs.path and same_words.path != mine.path, "merged into another actor's note"
    assert same_words.metadata["actor_id"] == theirs.metadata["actor_id"] == "user:42"
    assert mine.path.rsplit("/", 1)[0] == theirs.path.rsplit("/", 1)[0]  # the same folder, as before
    assert "2019" not in container.documents.read(brain, mine.path).decode()
    assert fact(container, brain, "My sister is allergic to peanuts.", "user/42", "ses_b").path == mine.path

    with access.as_system():
        container.erasure.erase("session_actor", "user:42")
    left = texts(container, brain)
    assert list(left) == [mine.path] and "2019" not in left[mine.path]


def test_an_actors_erasure_takes_the_summary_quoting_them(container: Container, brain: Brain) -> None:
    for text in ("I like jazz", "I play the cello", "I live in Porto"):
        fact(container, brain, text, "Alice")
    for text in ("I like techno", "I play the drums", "I live in Oslo"):
        fact(container, brain, text, "bob")
    job = container.consolidation.queue(brain)
    container.jobs.run_pending()
    assert container.jobs.status(job.id).status.value == "completed"
    summaries = [p for p in texts(container, brain) if p.endswith("/_summary.md")]
    assert sorted(summaries) == ["memory/agent/alice/_summary.md", "memory/agent/bob/_summary.md"]

    with access.as_system():
        container.erasure.erase("session_actor", "Alice")
    left = texts(container, brain)
    assert not any("cello" in text or "Porto" in text for text in left.values()), left
    assert "memory/agent/bob/_summary.md" in left and "drums" in left["memory/agent/bob/_summary.md"]


def test_consolidation_never_merges_two_actors_notes(container: Container, brain: Brain) -> None:
    mine = fact(container, brain, "My sister is allergic to peanuts and tree nuts.", "user/42")
    theirs = fact(container, brain, "My sister is allergic to peanuts and tree nuts!", "user:42")
    assert mine.path != theirs.path
    job = container.consolidation.queue(brain)
    container.jobs.run_pending()
    assert container.jobs.status(job.id).status.value == "completed"
    left = texts(container, brain)
    assert mine.path in left and theirs.path in left  # neither retired into the other
