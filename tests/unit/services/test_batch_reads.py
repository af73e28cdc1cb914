"""Documents read in batches: DocumentRepository.get_many / get_many_by_id, and search's hits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.ports.records import Item
from cairn.services.repositories import BrainRepository, DocumentRepository, doc_key
from tests.fakes.records import MemoryRecordStore

PATHS = ["notes/a.md", "notes/b.md", "notes/c.md"]


def _count(monkeypatch: pytest.MonkeyPatch, obj: object, name: str, calls: list[str]) -> None:
    method: Callable[..., Any] = getattr(obj, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return method(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)


@pytest.fixture
def calls(container: Container, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every read the record store serves, by method name."""
    seen: list[str] = []
    for name in ("get", "get_many"):
        _count(monkeypatch, container.adapters.records, name, seen)
    return seen


def _write_all(container: Container, brain: Brain) -> dict[str, str]:
    for path in PATHS:
        container.documents.write(brain, path, f"Otters hold hands while sleeping ({path}).".encode())
    repo = DocumentRepository(container.adapters.records)
    return {path: doc.id for path in PATHS if (doc := repo.get(brain.id, path)) is not None}


def test_get_many_by_id_matches_get_by_id_in_two_reads(
    container: Container, brain: Brain, calls: list[str]
) -> None:
    # Given three documents, one of whose record vanished behind its id pointer
    ids = _write_all(container, brain)
    container.adapters.records.delete(*doc_key(brain.id, "notes/c.md"))
    repo = DocumentRepository(container.adapters.records)
    wanted = [*ids.values(), "doc_missing", ids["notes/a.md"]]
    expected = {i: doc for i in wanted if (doc := repo.get_by_id(i)) is not None}
    calls.clear()
    # When read in a batch
    found = repo.get_many_by_id(wanted)
    # Then the same documents as one by one, from one read of pointers and one of documents
    assert found == expected
    assert sorted(d.path for d in found.values()) == ["notes/a.md", "notes/b.md"]
    assert calls == ["get_many", "get_many"]
    assert repo.get_many_by_id([]) == {}


def test_get_many_by_location_skips_missing_paths(container: Container, brain: Brain) -> None:
    _write_all(container, brain)
    repo = DocumentRepository(container.adapters.records)
    found = repo.get_many([(brain.id, "notes/b.md"), (brain.id, "nope.md"), ("brn_other", "notes/a.md")])
    assert list(found) == [(brain.id, "notes/b.md")]
    assert found[(brain.id, "notes/b.md")] == repo.get(brain.id, "notes/b.md")


def test_search_reads_its_hits_documents_in_one_batch(
    container: Container, brain: Brain, calls: list[str]
) -> None:
    _write_all(container, brain)
    calls.clear()
    hits = container.search.search(brain, "otters sleeping").hits
    assert sorted(h.path for h in hits) == PATHS
    assert calls == ["get_many"]


def test_a_hit_whose_document_record_vanished_falls_back_to_its_chunk(
    container: Container, brain: Brain
) -> None:
    # Given a document whose record is gone while its chunks are still indexed
    _write_all(container, brain)
    before = {h.path: h for h in container.search.search(brain, "otters sleeping").hits}
    container.adapters.records.delete(*doc_key(brain.id, "notes/c.md"))
    # When searched / Then its hit stays, shaped from the chunk alone, and the others are unchanged
    after = {h.path: h for h in container.search.search(brain, "otters sleeping").hits}
    assert after.keys() == before.keys()
    gone = after["notes/c.md"]
    assert gone.metadata == {} and gone.updated_at == gone.created_at
    assert after["notes/a.md"] == before["notes/a.md"]


def test_resolving_a_slug_is_one_read() -> None:
    class Counting(MemoryRecordStore):
        gets = 0

        def get(self, pk: str, sk: str) -> Item | None:
            Counting.gets += 1
            return super().get(pk, sk)

    repo = BrainRepository(Counting())
    now = datetime(2026, 1, 1, tzinfo=UTC)
    brain = Brain(
        id="brn_x",
        slug="team",
        name="Team",
        embedding_model="m",
        embedding_dim=8,
        created_at=now,
        updated_at=now,
    )
    repo.create(brain)
    Counting.gets = 0

    assert repo.by_slug("team", "local") == brain and Counting.gets == 1
