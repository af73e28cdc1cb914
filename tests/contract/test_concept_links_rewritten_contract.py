"""A rewrite that leaves a document fewer chunks drops the concept links of the chunks it dropped,
whichever path wrote it (services/documents/dropped_chunks.py, ConceptGraph.unlink_dropped), on
every record store: a REST PUT or batch, a bulk write, a gbrain page, a zengram memory's update, a
ThoughtMCP memory's update, a restore of an archive (`cairn import`). Before, only an ingest did,
and the concept tools went on finding the old text's concepts for the page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document, MemoryType
from cairn.entrypoints.http import create_app
from cairn.ports.records import Item
from cairn.services.documents.chunk_ids import chunk_id
from cairn.services.documents.dropped_chunks import DroppedChunks
from cairn.services.documents.inputs import BatchOp, DocumentInput
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.mnemosyne.concept_reach import reach_key
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.models import NewMemory
from tests.contract.test_concept_links_erased_contract import NAMES

PATH = "notes/harbour.md"


def text_of(parts: int) -> str:
    return "\n\n".join(
        f"## Part {n}\n\n" + f"The {first} Ferry Company moved its ledger to {second} Harbour. " * 8
        for n, (first, second) in enumerate(NAMES[:parts])
    )


def linked(c: Container, doc: Document) -> list[int]:
    """The ordinals (of the longest version's) whose chunks hold concept links."""
    return [n for n in range(len(NAMES)) if c.concepts.concepts_of(doc.brain_id, chunk_id(doc.id, n))]


def reach(c: Container, doc: Document) -> object:
    item = c.adapters.records.get(*reach_key(doc.brain_id, doc.id))
    return None if item is None else item.data["upto"]


def link(c: Container, doc_id: str) -> Document:
    """The concept links an ingest makes, over the document as stored now."""
    doc = c.documents.repo.stored_by_id(doc_id)
    assert doc is not None and doc.chunk_count > 3
    c.concepts.index_document(doc.brain_id, doc.id, c.documents.text_of(doc))
    assert linked(c, doc) == list(range(doc.chunk_count))
    return doc


def shortened(c: Container, doc: Document) -> None:
    now = c.documents.repo.stored_by_id(doc.id)
    assert now is not None and 0 < now.chunk_count < doc.chunk_count
    assert linked(c, doc) == list(range(now.chunk_count))
    assert reach(c, doc) == now.chunk_count


def _version(c: Container, doc_id: str) -> int:
    doc = c.documents.repo.stored_by_id(doc_id)
    assert doc is not None
    return doc.version


def _note(c: Container, brain: Brain) -> str:
    return c.documents.write(brain, PATH, text_of(8).encode()).document.id


SHORT = text_of(3).encode()
OCTETS = {"content-type": "application/octet-stream"}


def _put(c: Container, brain: Brain, _: str) -> None:
    c.documents.write(brain, PATH, SHORT)  # what REST's PUT /v1/brains/{b}/documents calls


def _batch(c: Container, brain: Brain, _: str) -> None:
    c.documents.batch(brain, [BatchOp("write", PATH, SHORT)])


def _bulk(c: Container, brain: Brain, _: str) -> None:
    c.documents.write_many(brain, [(PATH, SHORT, DocumentInput())])


def _modify(c: Container, brain: Brain, _: str) -> None:
    c.documents.modify(brain, PATH, lambda _live, _bytes: (SHORT, DocumentInput()))


def _gbrain(c: Container, brain: Brain, doc_id: str) -> None:
    c.pages.put(f"{brain.slug}::notes/harbour", text_of(3), expected_version=_version(c, doc_id))


def _rest_put(c: Container, brain: Brain, _: str) -> None:
    """The route itself: PUT /v1/brains/{b}/documents (open on loopback, as the embedded server)."""
    with TestClient(create_app(c), base_url="http://localhost") as client:
        answer = client.put(
            f"/v1/brains/{brain.slug}/documents", params={"path": PATH}, content=SHORT, headers=OCTETS
        )
    assert answer.status_code == 204, answer.text


REWRITES: dict[str, Callable[[Container, Brain, str], None]] = {
    "rest": _rest_put,
    "put": _put,
    "batch": _batch,
    "bulk": _bulk,
    "modify": _modify,
    "gbrain": _gbrain,
}


@pytest.mark.parametrize("how", list(REWRITES))
def test_a_document_rewritten_to_fewer_chunks_loses_the_dropped_chunks_links(c: Container, how: str) -> None:
    brain = c.brains.create("Shore", slug="shore")
    doc = link(c, _note(c, brain))
    REWRITES[how](c, brain, doc.id)
    shortened(c, doc)


def test_a_zengram_memory_updated_to_fewer_chunks_loses_the_dropped_chunks_links(c: Container) -> None:
    brain = c.brains.create("Shore", slug="shore")
    stored = c.memories.store(brain, MemoryInput(MemoryType.event, text_of(8), source_agent="ada"))
    doc = link(c, stored.memory.id)
    c.memories.update(brain, doc.id, content=text_of(3))
    shortened(c, doc)


def test_a_thoughtmcp_memory_updated_to_fewer_chunks_loses_the_dropped_chunks_links(c: Container) -> None:
    brain = thought_brain(c.brains, None, create=True)
    made = c.thoughts.remember(
        brain, NewMemory(content=text_of(8), user_id="ada", session_id="s1", sector="semantic")
    )
    doc = link(c, made["memoryId"])
    c.thoughts.update(brain, doc.id, "ada", content=text_of(3))
    shortened(c, doc)


def test_a_restore_over_a_longer_document_loses_the_dropped_chunks_links(c: Container) -> None:
    brain = c.brains.create("Shore", slug="shore")
    doc = link(c, _note(c, brain))
    source = c.brains.create("Later", slug="later")  # exported after the note was written
    c.documents.write(source, PATH, text_of(3).encode())
    c.archive.import_("shore", list(c.archive.export(source)))
    shortened(c, doc)


def test_a_rewrite_that_keeps_every_chunk_reads_no_reach(c: Container) -> None:
    """Only a write that drops chunks tells the hook: a rewrite of the same length costs no read."""
    brain = c.brains.create("Shore", slug="shore")
    doc = link(c, _note(c, brain))
    reads: list[str] = []
    real = c.concepts.reach.read
    c.concepts.reach.read = lambda b, d: reads.append(d) or real(b, d)  # type: ignore[method-assign]
    c.documents.write(brain, PATH, text_of(8).replace("Harbour", "Quay").encode())
    assert reads == [] and linked(c, doc) == list(range(8))


def _damage_reach(c: Container, doc: Document) -> None:
    c.adapters.records.put(Item(*reach_key(doc.brain_id, doc.id), {"upto": "eight"}))


def test_a_damaged_reach_does_not_stop_the_document_being_linked_again(
    c: Container, caplog: pytest.LogCaptureFixture
) -> None:
    """An ingest's linker over a document whose reach record is damaged links it all the same and
    mends the record; before, it raised DamagedStore on every later ingest of the document."""
    brain = c.brains.create("Shore", slug="shore")
    doc = link(c, _note(c, brain))
    _damage_reach(c, doc)
    link(c, doc.id)
    assert reach(c, doc) == 8
    assert f"the concept reach of document {doc.id} is damaged" in caplog.text
    assert "Quellmire" not in caplog.text  # the document's id, none of its text


def test_a_linker_over_a_damaged_reach_takes_back_the_links_past_the_chunks_the_document_has(
    c: Container,
) -> None:
    """Links of an earlier, longer version (left by a rewrite whose tidying did not run) under a
    damaged reach: the linker takes the widest reach the links give and trims it to the document."""
    brain = c.brains.create("Shore", slug="shore")
    doc = link(c, _note(c, brain))
    held, c.documents.indexer.dropped = c.documents.indexer.dropped, DroppedChunks()
    try:
        c.documents.write(brain, PATH, SHORT)  # nothing told: chunks 3..7 keep their links
    finally:
        c.documents.indexer.dropped = held
    assert linked(c, doc) == list(range(8))
    _damage_reach(c, doc)
    now = c.documents.repo.stored_by_id(doc.id)
    assert now is not None
    c.concepts.index_document(brain.id, doc.id, c.documents.text_of(now))
    shortened(c, doc)


@pytest.mark.parametrize("how", ["put", "batch"])
def test_a_rewrite_to_fewer_chunks_over_a_damaged_reach_drops_the_dropped_chunks_links(
    c: Container, how: str
) -> None:
    brain = c.brains.create("Shore", slug="shore")
    doc = link(c, _note(c, brain))
    _damage_reach(c, doc)
    REWRITES[how](c, brain, doc.id)
    shortened(c, doc)
