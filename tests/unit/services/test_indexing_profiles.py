"""DocumentIndexer.prepare with a library profile: the profile's spans, each chunk titled with its
context; without one (or with the default), exactly today's chunks."""

from __future__ import annotations

from cairn.ingest.profiles import DEFAULT_PROFILE, PROFILES
from cairn.services.documents.indexing import DocumentIndexer
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.embedder import HashingEmbedder
from tests.support.documents import a_document

BODY = "Walked to the market, bought apples, talked to the neighbour about the fence. " * 14
JOURNAL = f"Tuesday, 14 March 2023\n\n{BODY}\n\n2023-04-02\n\nDentist at nine, a small filling."


def indexer() -> DocumentIndexer:
    return DocumentIndexer(MemoryChunkIndex(64), HashingEmbedder(64), target_chars=700, overlap_chars=120)


def test_journal_profile_titles_every_chunk_of_an_entry_with_its_date() -> None:
    doc = a_document("doc_diary", "diary.md")
    prepared = indexer().prepare(doc, JOURNAL, profile=PROFILES["journal"])
    march = [c for c in prepared.chunks if c.start < JOURNAL.index("2023-04-02")]
    assert len(march) > 1
    assert all(c.title == "diary.md › Tuesday 14 March 2023" for c in march)
    assert prepared.chunks[-1].title == "diary.md › Sunday 2 April 2023"
    assert prepared.chunks[-1].text.startswith("2023-04-02")
    assert all(JOURNAL[c.start : c.end] == c.text for c in prepared.chunks)


def test_no_profile_and_the_default_profile_cut_as_before() -> None:
    doc = a_document("doc_diary", "diary.md")
    plain = indexer().prepare(doc, JOURNAL)
    default = indexer().prepare(doc, JOURNAL, profile=DEFAULT_PROFILE)
    nonfiction = indexer().prepare(doc, JOURNAL, profile=PROFILES["nonfiction"])
    assert plain.chunks == default.chunks == nonfiction.chunks
    assert all(c.title == "diary.md" for c in plain.chunks)


def test_a_profiled_rewrite_of_the_same_text_writes_nothing() -> None:
    doc = a_document("doc_diary", "diary.md")
    ix = indexer()
    ix.apply(doc, ix.prepare(doc, JOURNAL, profile=PROFILES["journal"]))
    again = ix.prepare(doc, JOURNAL, profile=PROFILES["journal"])
    assert again.chunks == [] and again.removed == () and again.count > 1
