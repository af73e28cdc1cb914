"""An erasure removes everything and finishes, on every record store: the context a sibling took
from a document in a folder it has since left, the concept links of a document whose reach record
is damaged, and the receipt of an erasure resumed after the index was busy counts what its first
attempt removed (services/erasure/)."""

from __future__ import annotations

import pytest

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain
from cairn.ports.records import Item
from cairn.services.mnemosyne.concept_reach import reach_key
from cairn.services.mnemosyne.concept_reach_sweep import done_key
from tests.contract.test_concept_links_erased_contract import PATH, text_of, words_kept, words_of

AGENT = "ada"
CODEWORD = "zephyrquill"


def shore(c: Container) -> Brain:
    with access.as_system():
        return c.brains.create("Shore", slug="shore")


def contexts_holding(c: Container, brain: Brain, word: str) -> list[str]:
    """The paths of the documents whose chunks are indexed with a context holding `word`."""
    found = []
    for doc in c.documents.repo.list(brain.id):
        chunks = c.adapters.chunks.get_chunks(brain.id, doc.id)
        if any(word in chunk.context.lower() for chunk in chunks):
            found.append(doc.path)
    return found


def found_by(c: Container, brain: Brain, query: str) -> list[str]:
    with access.as_system():
        return [hit.path for hit in c.search.search(brain, query, count_access=False).hits]


def test_a_damaged_reach_on_a_brain_the_pass_is_done_with_does_not_stop_the_erasure(
    c: Container, caplog: pytest.LogCaptureFixture
) -> None:
    """The pass will not mend the record (the brain is done): the erasure takes the links of every
    chunk of the document as its reach, says so in the log, and goes on."""
    brain = shore(c)
    with access.as_system():
        c.documents.write(brain, PATH, text_of(10))
        doc = c.documents.repo.stored(brain.id, PATH)
        assert doc is not None
        c.concepts.index_document(brain.id, doc.id, text_of(10).decode())
        c.documents.write(brain, PATH, text_of(3))  # no linker: chunks 3..9 keep their links
        records = c.adapters.records
        records.put(Item(*done_key(brain.id), {"at": c.adapters.clock.now().isoformat()}))  # nothing mends it
        records.put(Item(*reach_key(brain.id, doc.id), {"upto": "ten"}))  # damaged
        assert words_kept(records) == words_of(range(10))
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.status == "completed" and receipt.removed["documents"] == 1
    assert receipt.removed["links"] >= 10
    assert words_kept(records) == set()  # the links of every ordinal, the earlier version's included
    assert records.get(*reach_key(brain.id, doc.id)) is None
    assert f"the concept reach of document {doc.id} is damaged" in caplog.text


@pytest.mark.parametrize("at", [1, 2], ids=["first", "second"])
def test_an_erasure_resumed_after_the_index_was_busy_counts_what_its_first_attempt_removed(
    c: Container, at: int
) -> None:
    """The index refuses the erase of the `at`-th document once its record is removed: the
    erasure stops there, and its resume finds that document (and any before it) gone."""
    brain = shore(c)

    def busy() -> None:
        raise Unavailable("the search index is held by another process")

    with access.as_system():
        c.documents.write(brain, PATH, text_of(4))
        c.documents.write(brain, f"memory/agent/{AGENT}/other.md", b"A second note of the agent.")
        with faults.armed("documents.indexed", at=at, action=busy), pytest.raises(Unavailable):
            c.erasure.erase("agent_scope", AGENT, [brain.slug])
        (receipt,) = c.erasure.resume()
    assert receipt.status == "completed"
    assert receipt.removed["documents"] == 2 and receipt.removed["chunks"] == 5
    assert c.documents.repo.stored(brain.id, PATH) is None
