"""A queued ingest (services/ingest/ingest_steps.py) indexes a document's chunks under staged ids
(`chk_<doc>~<stage>_<n>`) that they keep once activated: their concept links go with the document
as the live ids' do, on every record store (services/mnemosyne/concept_reach.py). An erasure, a
deletion, a rewrite and the next queued ingest each leave none of the words of the text they
replaced or removed; the graph leg still finds the staged chunks by their links."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cairn import faults
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Document
from cairn.ports.records import Item, RecordStore
from cairn.services.documents.chunk_ids import LIVE, parse_chunk_id, staged_chunk_id
from cairn.services.ingest.ingest_steps import StagedIngest
from cairn.services.mnemosyne.concept_reach import reach_key
from tests.contract.test_concept_links_erased_contract import (
    PATH,
    _ErasingFirst,
    erase,
    text_of,
    words_kept,
    words_of,
    written,
)
from tests.contract.test_concept_reach_sweep_contract import run_out, sweep_of
from tests.fakes.container import fake_adapters
from tests.unit.test_staged_ingest import Context, run_steps

MOVED = PATH.replace("harbour.md", "moved.md")


@pytest.fixture
def two(records: RecordStore, tmp_path: Path) -> tuple[Container, Container]:
    """Two processes over one record store, each queueing ingests of files over 64 bytes."""
    adapters = replace(fake_adapters(), records=records)
    settings = Settings(data_dir=tmp_path / "data", ingest_queue_bytes=64)
    return build_container(settings, adapters), build_container(settings, adapters)


def queued(c: Container, brain: Brain, parts: int) -> Document:
    """The note ingested through the queue with that many parts, its chunks under staged ids."""
    result = c.ingest.ingest_bytes(brain, text_of(parts), name="harbour.md", path=PATH)
    assert result.status == "queued" and result.job_id
    staged = StagedIngest(c.ingest, c.brains, c.adapters.clock, batch_size=3)
    outcome = run_steps(staged, c.jobs.status(result.job_id))
    doc = c.documents.repo.stored_by_id(outcome["document_id"])
    assert doc is not None and doc.chunk_count == parts
    return doc


def queued_note(c: Container, parts: int) -> tuple[Brain, Document, str]:
    """A brain holding the note ingested through the queue, and the stage of its chunks' ids."""
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, parts)
    (stage,) = stages_of(c, doc)
    return brain, doc, stage


def stages_of(c: Container, doc: Document) -> set[str]:
    refs = [parse_chunk_id(chunk.id) for chunk in c.adapters.chunks.get_chunks(doc.brain_id, doc.id)]
    return {ref.stage for ref in refs if ref is not None}


def linked_words(c: Container) -> set[str]:
    """The document's words that any link holds (its words' other records left out: the excerpt a
    sibling keeps of its current text)."""
    return words_kept(c.adapters.records, ["links#"])


def linked_from(c: Container, doc: Document, stage: str) -> int:
    """How many of the document's chunk ids of `stage` hold links."""
    page = c.adapters.records.scan([f"links#{doc.brain_id}#out#chk_"])
    refs = [parse_chunk_id(item.pk.partition("#out#")[2]) for item in page.items]
    return len({ref for ref in refs if ref is not None and ref.document_id == doc.id and ref.stage == stage})


def reach_of(c: Container, doc: Document) -> dict[str, object] | None:
    item = c.adapters.records.get(*reach_key(doc.brain_id, doc.id))
    return None if item is None else dict(item.data)


def test_a_queued_ingest_links_its_staged_chunks_and_names_their_stage(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain, doc, stage = queued_note(c, 10)
    assert stage  # staged ids, not live ones
    assert words_kept(c.adapters.records) == words_of(range(10))
    assert reach_of(c, doc) == {"upto": 10, "stages": [stage]}
    hits = c.concepts.search([brain.id], "Where did the Quellmire Ferry Company move?", limit=5)
    assert hits and hits[0].chunk_id == staged_chunk_id(doc.id, stage, 0)


def unretired(c: Container) -> None:
    """The next linker stops before it removes the links of the stage its version replaced (a
    process killed there): those links stay, their stage on the reach record."""
    c.concepts.reach.retire = lambda *_args, **_kw: 0  # type: ignore[method-assign]


def test_an_erasure_removes_the_links_of_every_stage_a_queued_ingest_left(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain, doc, first = queued_note(c, 10)
    unretired(c)
    queued(c, brain, 4)
    assert first not in stages_of(c, doc) and linked_from(c, doc, first) == 4  # chunks 4..9 trimmed
    receipt = erase(c, brain)
    assert words_kept(c.adapters.records) == set()
    assert reach_of(c, doc) is None
    assert receipt.removed["links"] >= 16  # two concepts a chunk at least, of each stage


def test_a_deletion_removes_the_links_of_a_queued_ingests_chunks(two: tuple[Container, Container]) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    c.documents.delete(brain, PATH)
    assert words_kept(c.adapters.records) == set()
    assert reach_of(c, doc) is None


def test_a_rewrite_of_a_queued_ingest_keeps_its_ids_and_drops_the_links_of_the_chunks_it_dropped(
    two: tuple[Container, Container],
) -> None:
    """A write in the foreground keeps the ids the document's chunks carry (chunk_ids.kept_stage):
    the chunks it kept keep their links, as a live version's do, those it dropped lose theirs."""
    c, _ = two
    brain, doc, stage = queued_note(c, 10)
    c.documents.write(brain, PATH, text_of(3))
    assert stages_of(c, doc) == {stage}
    assert linked_words(c) == words_of(range(3))
    assert reach_of(c, doc) == {"upto": 3, "stages": [stage]}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_renamed_queued_ingest_keeps_its_links_and_is_found_by_them(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain, doc, stage = queued_note(c, 4)
    c.documents.rename(brain, PATH, MOVED)
    assert stages_of(c, doc) == {stage}
    assert linked_words(c) == words_of(range(4))
    hits = c.concepts.search([brain.id], "Where did the Brisendal Ferry Company move?", limit=5)
    assert hits and hits[0].chunk_id == staged_chunk_id(doc.id, stage, 1)
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_write_beside_a_queued_ingest_under_way_gives_live_ids_and_drops_every_staged_link(
    two: tuple[Container, Container],
) -> None:
    """The stored chunks carry two stages (the active version's, and the inactive one of an
    ingest under way): the write cannot tell which to keep, gives live ids, and the active stage's
    links go whole (its chunks are gone)."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    result = c.ingest.ingest_bytes(brain, text_of(6), name="harbour.md", path=PATH)
    assert result.job_id
    staged, job, ctx = (
        StagedIngest(c.ingest, c.brains, c.adapters.clock),
        c.jobs.status(result.job_id),
        Context(),
    )
    for name in ("validate", "extract", "chunk"):
        out = staged.steps().steps[name](job, ctx, {})
    for batch in out["batches"]:
        staged.index_batch(job, ctx, {"batch": batch})
    assert len(stages_of(c, doc)) == 2
    c.documents.write(brain, PATH, text_of(3))
    assert stages_of(c, doc) == {LIVE}
    assert linked_words(c) == set()  # the write is not linked yet
    assert reach_of(c, doc) == {"upto": 3}


def test_mnemosyne_reads_a_chunk_of_a_queued_ingest_by_its_id(two: tuple[Container, Container]) -> None:
    c, _ = two
    brain, doc, stage = queued_note(c, 4)
    library = c.libraries.describe(brain.id, library_type="nonfiction")
    found = c.libraries.get_chunk(staged_chunk_id(doc.id, stage, 2), [c.libraries.library(library.uid)])
    assert found.document.id == doc.id and "Calluvar" in found.chunk.text


def test_the_next_queued_ingest_removes_the_links_of_the_stage_it_replaced(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    written(c, brain, 10)  # live ids, linked
    doc = queued(c, brain, 6)
    (first,) = stages_of(c, doc)
    assert words_kept(c.adapters.records) == words_of(range(6))  # the live ids' links went
    queued(c, brain, 4)
    (second,) = stages_of(c, doc)
    assert second != first
    assert words_kept(c.adapters.records) == words_of(range(4))
    assert reach_of(c, doc) == {"upto": 4, "stages": [second]}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_damaged_reach_of_a_queued_ingest_does_not_keep_its_links_from_the_erasure(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain, doc, first = queued_note(c, 10)
    unretired(c)
    queued(c, brain, 4)
    assert linked_from(c, doc, first) == 4
    held = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert held is not None
    c.adapters.records.put(
        Item(*reach_key(brain.id, doc.id), {"upto": 4, "stages": ["NOT A STAGE"]}), held.version
    )
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_linker_racing_the_erasure_of_a_queued_ingest_takes_its_links_back(
    two: tuple[Container, Container],
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)

    def linked_meanwhile() -> None:
        other.concepts.index_document(brain.id, doc.id, text_of(10).decode())

    with faults.armed("documents.bytes_erased", action=linked_meanwhile):
        erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_linker_of_a_replaced_stage_takes_back_what_it_linked_after_the_next_stage_retired_it(
    two: tuple[Container, Container],
) -> None:
    """Another process links the first queued version after the second was activated, linked and
    retired the first's links: it finds its stage off the record and takes its links back, and the
    second version's links stay."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    other.concepts.rules = _ErasingFirst(other.concepts.rules, lambda: queued(c, brain, 4))
    other.concepts.index_document(brain.id, doc.id, text_of(10).decode())
    (second,) = stages_of(c, doc)
    assert words_kept(c.adapters.records) == words_of(range(4))
    assert reach_of(c, doc) == {"upto": 4, "stages": [second]}


def as_an_earlier_release_left_it(c: Container, brain: Brain) -> tuple[Document, str, str]:
    """Two queued ingests of the note under a release whose reach named no stages: the first
    stage's links stayed when the second replaced it, and the reach names neither."""
    doc = queued(c, brain, 4)
    (first,) = stages_of(c, doc)
    unretired(c)
    queued(c, brain, 5)
    (second,) = stages_of(c, doc)
    held = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert held is not None and (linked_from(c, doc, first), linked_from(c, doc, second)) == (4, 5)
    c.adapters.records.put(Item(*reach_key(brain.id, doc.id), {"upto": 5}), held.version)
    return doc, first, second


def test_the_pass_names_the_stages_an_earlier_release_linked_so_the_erasure_reaches_them(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc, first, second = as_an_earlier_release_left_it(c, brain)
    run_out(c, sweep_of(c))
    assert reach_of(c, doc) == {"upto": 5, "stages": sorted([first, second])}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_the_pass_removes_the_staged_links_an_earlier_release_left_of_a_document_it_erased(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc, first, _ = as_an_earlier_release_left_it(c, brain)
    erase(c, brain)
    assert linked_from(c, doc, first) == 4  # what that erasure left
    # the first pass, which knew only live ids, was done with the brain and finished
    now = c.adapters.clock.now().isoformat()
    c.adapters.records.put(Item("concept-reach-pass", "pass", {"started": now, "finished": True}))
    c.adapters.records.put(Item(f"links#{brain.id}#reach-done", "concept", {"at": now}))
    run_out(c, sweep_of(c))
    assert words_kept(c.adapters.records) == set()
    assert reach_of(c, doc) is None
