"""Consolidation: merge, promote, prune, summaries, and the nothing-lost property."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from cairn import faults
from cairn.auth import access
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document, DocumentSource, MemoryFacet, MemoryType
from cairn.ports.facts import FactDraft
from cairn.services.documents.inputs import DocumentInput
from cairn.services.memory.fact_memory import Provenance, fact_tokens
from tests.fakes.clock import FakeClock


def fact(
    container: Container, brain: Brain, text: str, origin: str = "ses_a", actor: str | None = None
) -> Document:
    draft = FactDraft(text=text, source_ids=(f"msg_{abs(hash(text)) % 10_000}",), category="personal")
    return container.extraction.facts.store(
        brain, draft, Provenance(origin, draft.source_ids, "fake", actor)
    ).document


def episode(container: Container, brain: Brain, name: str, importance: float) -> Document:
    info = DocumentInput(
        title=f"Episode {name}",
        source=DocumentSource.reflect,
        metadata={"kind": "episode"},
        memory=MemoryFacet(type=MemoryType.event, importance=importance, sector="episodic"),
    )
    body = f"# Episode {name}\n\nWe talked about {name} and fixed the {name} pipeline.\n".encode()
    return container.documents.write(brain, f"memory/global/episodes/{name}.md", body, info).document


def consolidate(container: Container, brain: Brain) -> dict:
    job = container.consolidation.queue(brain)
    container.jobs.run_pending()
    done = container.jobs.status(job.id)
    assert done.status.value == "completed", done.error
    assert done.progress == 1.0
    return done.result or {}


def final(container: Container, brain: Brain, doc_id: str) -> Document:
    """Follow `replaced_by` from a record to the live document that carries it."""
    doc = container.documents.record_by_id(brain, doc_id)
    for _ in range(10):
        if doc.deleted_at is None:
            return doc
        assert doc.replaced_by, f"{doc.path} was deleted with no replacement"
        doc = container.documents.record_by_id(brain, doc.replaced_by)
    raise AssertionError("replacement chain too long")


def test_near_duplicates_merge_into_the_most_confirmed(container: Container, brain: Brain) -> None:
    keep, twin = twins(container, brain)  # the first confirmed twice
    other = fact(container, brain, "Melanie painted a sunrise over the lake")

    result = consolidate(container, brain)

    assert result["merge"] == {"groups": 1, "merged": 1}
    gone = container.documents.record_by_id(brain, twin.id)
    assert gone.deleted_at is not None and gone.deleted_reason == "merged" and gone.replaced_by == keep.id
    survivor = container.documents.get_by_id(brain, keep.id)
    assert survivor.metadata["origins"] == "ses_a,ses_b,ses_c"
    assert survivor.metadata["confirmations"] == 3 and survivor.metadata["merged_from"] == twin.id
    assert (
        "Caroline moved here from Sweden four years ago"
        in container.documents.read(brain, survivor.path).decode()
    )
    assert container.documents.get_by_id(brain, other.id).deleted_at is None
    assert all(h.document_id != twin.id for h in container.search.search(brain, "Sweden").hits)


def test_facts_confirmed_in_two_sessions_are_promoted(container: Container, brain: Brain) -> None:
    stable = fact(container, brain, "Jon owns a dance studio")
    fact(container, brain, "Jon owns a dance studio", origin="ses_b")
    once = fact(container, brain, "Jon lost his banking job")

    assert consolidate(container, brain)["promote"] == {"promoted": 1}
    promoted = container.documents.get_by_id(brain, stable.id)
    assert promoted.metadata["stable"] is True and promoted.memory is not None
    assert promoted.memory.importance == 0.8 and promoted.memory.sector == "semantic"
    assert "stable" not in container.documents.get_by_id(brain, once.id).metadata


def test_stale_unimportant_episodes_move_into_the_archive(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    old_minor = episode(container, brain, "alpha", importance=0.2)
    old_major = episode(container, brain, "beta", importance=0.9)
    clock.advance(40 * 86400)
    recent_minor = episode(container, brain, "gamma", importance=0.2)

    assert consolidate(container, brain)["prune"] == {"pruned": 1, "events_expired": 0}
    gone = container.documents.record_by_id(brain, old_minor.id)
    assert gone.deleted_reason == "pruned"
    archive = container.documents.record_by_id(brain, gone.replaced_by or "")
    assert archive.path == f"memory/global/episodes/_archive-{old_minor.created_at:%Y-%m}.md"
    assert archive.source is DocumentSource.compile
    assert "fixed the alpha pipeline" in container.documents.read(brain, archive.path).decode()
    assert archive.id in {h.document_id for h in container.search.search(brain, "alpha pipeline").hits}
    for kept in (old_major, recent_minor):
        assert container.documents.get_by_id(brain, kept.id).deleted_at is None


def test_folders_get_a_summary_and_a_second_pass_changes_nothing(container: Container, brain: Brain) -> None:
    for text in ("Ana likes jazz", "Ana plays the cello", "Ana lives in Porto"):
        fact(container, brain, text)

    first = consolidate(container, brain)
    summary = container.documents.read(brain, "memory/global/_summary.md").decode()
    assert first["summaries"] == {"folders": 1, "written": 1}
    assert "3 notes" in summary and "- Ana plays the cello (memory/global/" in summary
    assert container.documents.get(brain, "memory/global/_summary.md").source is DocumentSource.compile

    second = consolidate(container, brain)
    assert second["merge"] == {"groups": 0, "merged": 0}
    assert second["summaries"]["written"] == 0


def test_nothing_is_lost(container: Container, brain: Brain, clock: FakeClock) -> None:
    rng = random.Random(7)
    people = ["Ana", "Ben", "Caro", "Dev", "Eli"]
    things = ["jazz", "chess", "sushi", "hiking", "pottery", "Lisbon", "a red bike", "two cats"]
    for i in range(60):
        who, what = rng.choice(people), rng.choice(things)
        wording = rng.choice(["{w} likes {t}", "{w} really likes {t}", "{w} likes {t} a lot", "{w} owns {t}"])
        text = wording.format(w=who, t=what)
        if i % 2:  # notes written by hand are not deduplicated on the way in
            container.ingest.remember(brain, text)
        else:
            fact(container, brain, text, origin=f"ses_{i % 4}")
    for i in range(8):
        episode(container, brain, f"e{i}", importance=rng.choice([0.1, 0.3, 0.9]))
    clock.advance(60 * 86400)
    before = {
        d.id: container.documents.read(brain, d.path).decode() for d in container.documents.documents(brain)
    }

    result = consolidate(container, brain)

    assert result["merge"]["merged"] > 0 and result["prune"]["pruned"] > 0
    for doc_id, text in before.items():
        carrier = final(container, brain, doc_id)
        carried = fact_tokens(container.documents.read(brain, carrier.path).decode())
        assert fact_tokens(text) <= carried, f"{text!r} is not in {carrier.path}"


def twins(container: Container, brain: Brain) -> tuple[Document, Document]:
    keep = fact(container, brain, "Caroline moved from Sweden four years ago")
    fact(container, brain, "Caroline moved from Sweden four years ago", origin="ses_b")  # the survivor
    twin = container.documents.write(
        brain,
        "memory/global/caroline-sweden.md",
        b"Caroline moved here from Sweden four years ago",
        DocumentInput(
            metadata={"kind": "fact", "origins": "ses_c", "source_ids": "msg_c", "confirmations": 1}
        ),
    ).document
    return keep, twin


def before_the_fold(container: Container, act: Callable[[], object]) -> None:
    """`act` runs once the merge has read the notes, just before it folds them (a user's write)."""
    service = container.consolidation
    fold = service._fold_into

    def acting_first(*args: Any, **kwargs: Any) -> bool:
        act()
        return fold(*args, **kwargs)

    service._fold_into = acting_first  # type: ignore[method-assign]


def test_a_note_written_while_the_merge_ran_is_never_retired_unread(
    container: Container, brain: Brain
) -> None:
    _, twin = twins(container, brain)
    update = b"Caroline moved here from Sweden four years ago; she now lives in Oslo"
    before_the_fold(container, lambda: container.documents.write(brain, twin.path, update))

    result = consolidate(container, brain)

    assert result["merge"] == {"groups": 1, "merged": 0}
    assert container.documents.read(brain, twin.path) == update  # acknowledged, so kept live
    assert consolidate(container, brain)["merge"]["merged"] <= 1  # a later run may fold it, whole
    assert "Oslo" in container.documents.read(brain, final(container, brain, twin.id).path).decode()


def test_nothing_is_folded_into_a_survivor_deleted_while_the_merge_ran(
    container: Container, brain: Brain
) -> None:
    keep, twin = twins(container, brain)
    before_the_fold(container, lambda: container.documents.delete(brain, keep.path))

    result = consolidate(container, brain)

    assert result["merge"] == {"groups": 1, "merged": 0}
    assert container.documents.get_by_id(brain, twin.id).deleted_at is None


def test_nothing_is_retired_into_a_survivor_deleted_after_the_fold(
    container: Container, brain: Brain
) -> None:
    keep, twin = twins(container, brain)
    with faults.armed("consolidation.merged", action=lambda: container.documents.delete(brain, keep.path)):
        result = consolidate(container, brain)

    assert result["merge"] == {"groups": 1, "merged": 0}
    assert container.documents.get_by_id(brain, twin.id).deleted_at is None


def test_asking_again_while_a_consolidation_is_pending_returns_it(container: Container, brain: Brain) -> None:
    first = container.consolidation.queue(brain)
    assert container.consolidation.queue(brain).id == first.id  # queued: the same job, nothing piles up
    container.jobs.run_pending()

    second = container.consolidation.queue(brain)  # the first finished: a new run
    assert second.id != first.id and container.consolidation.queue(brain).id == second.id
    assert container.jobs.run_pending() == 1


def test_each_starter_gets_its_own_consolidation(container: Container, brain: Brain) -> None:
    system = container.consolidation.queue(brain)
    owner = Principal("local", "local", frozenset({READ, WRITE}), Via.static_token)
    with access.acting_as(owner, WRITE):
        theirs = container.consolidation.queue(brain)
        assert container.consolidation.queue(brain).id == theirs.id

    assert theirs.id != system.id and theirs.principal == "local/local"
