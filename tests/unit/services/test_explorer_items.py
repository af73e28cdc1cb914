"""The UI's item listing: filters before the page limit, a bounded read per page that says when it
stopped early, cursors that cover the brain once, and kinds told apart by what each record carries."""

from __future__ import annotations

import pytest

from cairn.domain.errors import InvalidInput
from cairn.domain.models import MemoryFacet, MemoryType
from cairn.services.explorer import items as listing
from cairn.services.explorer.items import ItemFilter, ItemListing, encode
from cairn.services.explorer.kinds import kind_of
from cairn.services.repositories import DocumentRepository
from tests.fakes.records import MemoryRecordStore
from tests.support.documents import a_document


def seeded(count: int, memory_every: int = 0) -> DocumentRepository:
    repo = DocumentRepository(MemoryRecordStore())
    docs = []
    for n in range(count):
        doc = a_document(f"doc_{n:05d}", f"notes/{n:05d}.md", brain_id="b1")
        if memory_every and n % memory_every == memory_every - 1:
            doc = doc.model_copy(update={"memory": MemoryFacet(type=MemoryType.fact)})
        docs.append(doc)
    repo.commit([repo.put_op(d, None) for d in docs])
    return repo


class Brain:
    id = "b1"


def test_pages_cover_the_brain_once_in_path_order() -> None:
    lister = ItemListing(seeded(123))
    seen: list[str] = []
    cursor = None
    while True:
        page = lister.page(Brain(), ItemFilter(), cursor=cursor, limit=50)  # type: ignore[arg-type]
        seen += [d.path for d in page.items]
        assert page.exhausted
        if page.cursor is None:
            break
        cursor = page.cursor
    assert seen == [f"notes/{n:05d}.md" for n in range(123)]


def test_a_page_that_fills_exactly_at_the_end_has_no_cursor() -> None:
    page = ItemListing(seeded(50)).page(Brain(), ItemFilter(), limit=50)  # type: ignore[arg-type]
    assert len(page.items) == 50 and page.cursor is None


def test_a_rare_filter_stops_at_the_budget_and_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "SCAN_BUDGET", 40)
    monkeypatch.setattr(listing, "BATCH", 15)
    lister = ItemListing(seeded(200, memory_every=30))
    flt = ItemFilter(kind="typed memory")
    first = lister.page(Brain(), flt, limit=10)  # type: ignore[arg-type]
    assert first.scanned == 40 and not first.exhausted and first.cursor is not None
    assert [d.path for d in first.items] == ["notes/00029.md"]
    found = [d.path for d in first.items]
    cursor = first.cursor
    while cursor is not None:
        page = lister.page(Brain(), flt, cursor=cursor, limit=10)  # type: ignore[arg-type]
        assert page.scanned <= 40
        found += [d.path for d in page.items]
        cursor = page.cursor
    assert found == [f"notes/{n:05d}.md" for n in range(29, 200, 30)]


def test_validity_and_tag_filters() -> None:
    repo = seeded(6)
    gone = a_document("doc_gone", "notes/gone.md", brain_id="b1").model_copy(
        update={"deleted_at": a_document("x", "x").created_at}
    )
    old = a_document("doc_old", "notes/old.md", brain_id="b1").model_copy(
        update={"memory": MemoryFacet(type=MemoryType.fact, superseded_by="doc_new"), "tags": ["ops"]}
    )
    repo.commit([repo.put_op(gone, None), repo.put_op(old, None)])
    lister = ItemListing(repo)

    def paths(**kw: object) -> list[str]:
        return [d.path for d in lister.page(Brain(), ItemFilter(**kw)).items]  # type: ignore[arg-type]

    assert "notes/gone.md" not in paths() and "notes/old.md" not in paths()
    assert paths(validity="deleted") == ["notes/gone.md"]
    assert paths(validity="superseded") == ["notes/old.md"]
    assert paths(validity="any", tag="ops") == ["notes/old.md"]


def test_a_forged_cursor_is_refused_and_kinds_are_told_apart() -> None:
    with pytest.raises(InvalidInput):
        ItemListing(seeded(1)).page(Brain(), ItemFilter(), cursor="%%%")  # type: ignore[arg-type]
    assert encode("notes/a.md")
    doc = a_document("d", "people/alice", brain_id="b1")
    assert kind_of(doc) == "page"
    assert kind_of(doc.model_copy(update={"path": "people/alice.md"})) == "note"
    pdf = doc.model_copy(update={"path": "papers/x.pdf", "content_type": "application/pdf"})
    assert kind_of(pdf) == "library item"
    sector = doc.model_copy(update={"memory": MemoryFacet(type=MemoryType.note, sector="emotional")})
    assert kind_of(sector) == "sector memory"
