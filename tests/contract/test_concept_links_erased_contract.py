"""Nothing drawn from an erased document outlives its erasure, on every record store: the concept
links of chunks an earlier, longer version had go with it (those an earlier release's rewrite to
fewer chunks left), a rewrite that leaves a document fewer chunks drops the links of those it
dropped (test_concept_links_rewritten_contract.py: through every path), and a linker racing the
erasure (another process's) takes back what it linked (services/mnemosyne/concept_reach.py).

Each test reads every record the store holds afterwards and looks for the document's words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Document
from cairn.ports.records import RecordStore
from cairn.services.documents.chunk_ids import chunk_id
from cairn.services.documents.dropped_chunks import DroppedChunks
from cairn.services.documents.inputs import BatchOp
from cairn.services.erasure.log import Receipt
from cairn.services.links.repository import LinkRepository
from cairn.services.mnemosyne.concept_reach import reach_key
from tests.fakes.container import fake_adapters
from tests.support.store_words import words_held

AGENT = "ada"
PATH = f"memory/agent/{AGENT}/harbour.md"
NAMES = [
    ("Quellmire", "Vantorra"),
    ("Brisendal", "Ostravek"),
    ("Calluvar", "Dremmoch"),
    ("Fenwarrow", "Glimmerath"),
    ("Hallowick", "Istrabeth"),
    ("Jorunvale", "Kestrimor"),
    ("Lumbervay", "Morthwane"),
    ("Nettlecombe", "Orravine"),
    ("Pellinsk", "Quarrowby"),
    ("Rathmoral", "Sulvendor"),
]
WORDS = [word.lower() for pair in NAMES for word in pair]


def part(n: int) -> str:
    first, second = NAMES[n]
    return f"## Part {n}\n\n" + f"The {first} Ferry Company moved its ledger to {second} Harbour. " * 8


def text_of(parts: int) -> bytes:
    return "\n\n".join(part(n) for n in range(parts)).encode()


@pytest.fixture
def two(records: RecordStore, tmp_path: Path) -> tuple[Container, Container]:
    """Two processes over the same stores (each its own services and path locks)."""
    adapters = replace(fake_adapters(), records=records)
    settings = Settings(data_dir=tmp_path / "data")
    return build_container(settings, adapters), build_container(settings, adapters)


def written(c: Container, brain: Brain, parts: int, *, link: bool = True, earlier: bool = False) -> Document:
    """The note written with that many parts (a chunk each), its concept links made as an ingest
    makes them unless not `link` (written through another surface). `earlier`: written as a release
    before every rewrite dropped the links of the chunks it dropped wrote it (those links stay)."""
    if earlier:
        held, c.documents.indexer.dropped = c.documents.indexer.dropped, DroppedChunks()
        try:
            c.documents.write(brain, PATH, text_of(parts))
        finally:
            c.documents.indexer.dropped = held
    else:
        c.documents.write(brain, PATH, text_of(parts))
    doc = c.documents.repo.stored(brain.id, PATH)
    assert doc is not None and doc.chunk_count == parts
    if link:
        c.concepts.index_document(brain.id, doc.id, text_of(parts).decode())
    return doc


def strayed(c: Container, brain: Brain, doc: Document, ordinal: int, *, like: int = 9) -> None:
    """The concept links of the document's chunk `like` copied to a chunk id of `ordinal`, as a
    store changed outside Cairn holds them (`chk_<doc>_999999999999`)."""
    links = LinkRepository(c.adapters.records)
    kind = c.concepts.reach.kind
    for link in list(links.outgoing(brain.id, chunk_id(doc.id, like), kind)):
        links.add(link.model_copy(update={"source_id": chunk_id(doc.id, ordinal)}))


def words_kept(records: RecordStore, prefixes: Sequence[str] = ()) -> set[str]:
    """The document's words that any record of the store still holds (every partition read, or
    those of `prefixes`)."""
    return words_held(records, WORDS, prefixes)


def words_of(parts: range) -> set[str]:
    return {word.lower() for n in parts for word in NAMES[n]}


def erase(c: Container, brain: Brain) -> Receipt:
    with access.as_system():
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.removed["documents"] == 1
    return receipt


def test_the_links_of_every_version_are_in_the_store_before_the_erasure(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    written(c, brain, 10)
    assert words_kept(c.adapters.records) == words_of(range(10))  # the concept links hold them


def test_a_rewrite_to_fewer_chunks_drops_the_links_of_the_chunks_it_dropped(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10)
    written(c, brain, 3)
    assert words_kept(c.adapters.records) == words_of(range(3))
    reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert reach is not None and reach.data == {"upto": 3}


def test_an_erasure_removes_the_links_of_the_chunks_an_earlier_version_had(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10)
    written(c, brain, 3, link=False, earlier=True)  # chunks 3..9 keep their links
    assert words_kept(c.adapters.records) == words_of(range(10))
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


def test_links_made_as_the_erasure_removes_the_document_go_with_it(
    two: tuple[Container, Container],
) -> None:
    """Another process links the document between the erasure's removal of its links and of its
    record (its bytes gone, its record still there): the erase's removal takes those too."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10, link=False)

    def linked_meanwhile() -> None:
        assert other.concepts.index_document(brain.id, doc.id, text_of(10).decode()) > 0

    with faults.armed("documents.bytes_erased", action=linked_meanwhile):
        erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_the_receipt_counts_the_links_the_erase_removed_after_a_linker_raced_it(
    two: tuple[Container, Container],
) -> None:
    """The links another process made as the erase went are removed by its removal hook, after
    the commit: the receipt counts them with the rest."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10, link=False)
    made: list[int] = []

    def linked_meanwhile() -> None:
        made.append(other.concepts.index_document(brain.id, doc.id, text_of(10).decode()))

    with faults.armed("documents.bytes_erased", action=linked_meanwhile):
        receipt = erase(c, brain)
    assert made[0] > 0 and words_kept(c.adapters.records) == set()
    assert receipt.removed["links"] == made[0]


def test_a_reach_raised_between_the_erasures_read_and_its_commit_has_its_links_removed_before_it(
    two: tuple[Container, Container],
) -> None:
    """The erasure reads every document's concept reach once, before it goes through them, and
    its commit checks the reach it removed the links of is still the record's: a stale linker of a
    longer version raising it between (another process's) fails the commit, whose next try reads the
    reach again and removes those links too. So a kill right after the commit, before its removal
    hook, leaves none of them."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 5)
    written(c, brain, 3, link=False, earlier=True)  # chunks 3 and 4 keep their links: reach 5
    first = c.adapters.chunks.get_chunks(brain.id, doc.id)[0]
    longer = [
        first.model_copy(update={"id": chunk_id(doc.id, n), "ordinal": n, "text": part(n)})
        for n in range(5, 10)
    ]

    def linked_meanwhile() -> None:
        other.concepts.reach.extend(brain.id, doc.id, 10)
        assert other.concepts.index(brain.id, text_of(10).decode(), longer) > 0

    with (
        faults.armed("documents.bytes_erased", action=linked_meanwhile),
        faults.armed("documents.committed"),
        access.as_system(),
        pytest.raises(faults.InjectedFault),
    ):
        c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert c.documents.repo.stored_by_id(doc.id) is None
    assert words_kept(c.adapters.records) == set()


class _ErasingFirst:
    """Concept rules that run `first` once, before they find the text's concepts: the linker has
    read the document's chunks, `first` (an erasure, a rewrite) then commits, and the linker links
    after."""

    def __init__(self, rules: Any, first: Callable[[], object]) -> None:
        self.rules, self.first = rules, first

    def extract(self, text: str) -> Any:
        first, self.first = self.first, lambda: None
        first()
        return self.rules.extract(text)


def test_a_linker_that_read_the_chunks_before_the_erasure_takes_its_links_back(
    two: tuple[Container, Container],
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10, link=False)
    other.concepts.rules = _ErasingFirst(other.concepts.rules, lambda: erase(c, brain))
    other.concepts.index_document(brain.id, doc.id, text_of(10).decode())
    assert c.documents.repo.stored_by_id(doc.id) is None
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


def test_a_linker_of_a_longer_version_takes_back_the_links_of_chunks_a_rewrite_dropped_meanwhile(
    two: tuple[Container, Container],
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10, link=False)
    other.concepts.rules = _ErasingFirst(other.concepts.rules, lambda: written(c, brain, 3))
    other.concepts.index_document(brain.id, doc.id, text_of(10).decode())
    assert words_kept(c.adapters.records) == words_of(range(3))


def test_a_deletion_removes_the_links_of_every_chunk_the_document_had(
    two: tuple[Container, Container],
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10)
    written(c, brain, 3, link=False, earlier=True)
    c.documents.delete(brain, PATH)
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


def moved(c: Container, brain: Brain, src: str, dst: str, how: str) -> None:
    """A rename, alone or as a batch's op."""
    if how == "rename":
        c.documents.rename(brain, src, dst)
    else:
        c.documents.batch(brain, [BatchOp("rename", src, to=dst)])


@pytest.mark.parametrize("how", ["rename", "batch"])
def test_a_rename_over_a_document_removes_the_links_of_the_one_it_replaced(
    two: tuple[Container, Container], how: str
) -> None:
    """The document a rename replaces is gone (its record, its chunks): its links and its reach go
    with it, as a deletion's do."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10)
    c.documents.write(brain, "notes/other.md", b"# Other\n\nNothing of the harbour here.")
    moved(c, brain, "notes/other.md", PATH, how)
    assert c.documents.repo.stored_by_id(doc.id) is None
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


@pytest.mark.parametrize("how", ["rename", "batch"])
def test_an_erasure_after_a_rename_leaves_no_excerpt_in_the_folder_it_left(
    two: tuple[Container, Container], how: str
) -> None:
    """A document written after another in a folder is indexed with an excerpt of it: once that
    one moves into the erased scope, the erasure looks in its new folder only, so the move takes
    it out of the old folder's recent siblings, and the excerpt out of the sibling indexed with it."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    c.documents.write(brain, "notes/harbour.md", text_of(3))
    c.documents.write(brain, "notes/later.md", b"# Later\n\nThe answer, in other words.")
    later = c.documents.repo.stored(brain.id, "notes/later.md")
    assert later is not None
    assert "quellmire" in c.adapters.chunks.get_chunks(brain.id, later.id)[0].context.lower()
    moved(c, brain, "notes/harbour.md", PATH, how)
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()
    held = " ".join(ch.context + ch.text for ch in c.adapters.chunks.get_chunks(brain.id, later.id))
    assert not {word for word in WORDS if word in held.lower()}
