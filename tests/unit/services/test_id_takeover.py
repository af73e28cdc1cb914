"""A document id is the store's, not a tenant's: an import that keeps ids (zengram's, gbrain's or
an archive's) must not take over an id that a document of a brain the caller cannot see holds, or
the id's pointer would move and its owner lose the item from every lookup by id (search, PATCH,
DELETE). The check reads the pointer whoever may see it, and the write's pointer is created only
when the id is new to the store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, SCOPES, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import Brain, MemoryType
from cairn.services.documents.inputs import DocumentInput
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery
from tests.fakes.container import fake_container


@contextmanager
def tenant(name: str) -> Iterator[None]:
    with access.acting_as(Principal(name, f"{name}-admin", frozenset(SCOPES), Via.api_key), ADMIN):
        yield


@pytest.fixture
def c(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


def brains(c: Container) -> tuple[Brain, Brain]:
    with tenant("a"):
        a = c.brains.create("A's brain", slug="a")
    with tenant("b"):
        b = c.brains.create("B's brain", slug="b")
    return a, b


def test_a_memory_id_another_tenant_holds_is_refused_to_an_import(c: Container) -> None:
    a, b = brains(c)
    with tenant("a"):
        held = c.memories.store(a, MemoryInput(MemoryType.fact, "Acme's billing runs on Postgres")).memory
    with tenant("b"), pytest.raises(InvalidInput, match="is already used by another document"):
        c.memories.store(b, MemoryInput(MemoryType.fact, "planted", memory_id=held.id))

    with tenant("a"):
        assert c.documents.repo.get_by_id(held.id) is not None  # still A's, found by id
        hits = c.memories.search(a, "billing Postgres", MemoryQuery())
        assert [h.memory.id for h in hits][:1] == [held.id]


def test_an_archive_keeps_no_id_another_tenant_holds(c: Container) -> None:
    a, b = brains(c)
    with tenant("a"):
        page = c.documents.write(a, "projects/zebra.md", b"# Zebra\n\nThe zebra project.\n").document
        source = c.brains.create("Source", slug="source")
        c.documents.write(source, "notes/evil.md", b"# Evil\n\nPlanted.\n")
        records = list(c.archive.export(source))
    planted = next(r for r in records if r["kind"] == "document")
    planted["id"] = page.id  # an archive naming A's page's id
    with tenant("b"):
        c.archive.import_("b", records)
        imported = c.documents.get(b, "notes/evil.md")
    assert imported.id != page.id
    with tenant("a"):
        assert c.documents.repo.get_by_id(page.id) == c.documents.get(a, "projects/zebra.md")


def test_a_write_never_moves_another_documents_id_pointer(c: Container) -> None:
    a, b = brains(c)
    with tenant("a"):
        held = c.documents.write(a, "notes/a.md", b"A's note").document
    with tenant("b"), pytest.raises(Conflict):
        c.documents.write(b, "notes/b.md", b"B's note", DocumentInput(doc_id=held.id))
    with tenant("a"):
        assert c.documents.repo.get_by_id(held.id) == c.documents.get(a, "notes/a.md")
    with tenant("b"):
        assert c.documents.repo.stored(b.id, "notes/b.md") is None  # nothing half-written
