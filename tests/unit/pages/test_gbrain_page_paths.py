"""Which documents are gbrain pages and under which slug (services/gbrain/page_paths.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.domain.models import Document, MemoryFacet
from cairn.services.gbrain.page_paths import page_slug, pick, slug_of_path, unshadowed

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def doc(path: str, *, memory: bool = False, deleted: bool = False) -> Document:
    return Document(
        id=f"doc_{path}",
        brain_id="brn_1",
        path=path,
        title=path,
        checksum_sha256="0" * 64,
        byte_size=1,
        blob_key=path,
        commit_sha="0" * 40,
        memory=MemoryFacet() if memory else None,
        created_at=NOW,
        updated_at=NOW,
        deleted_at=NOW if deleted else None,
    )


@pytest.mark.parametrize(
    ("path", "slug"),
    [
        ("people/alice", "people/alice"),
        ("memory/global/boiler-01hx.md", "memory/global/boiler-01hx"),
        ("notes/plan.md", "notes/plan"),
        ("notes/Plan.md", None),  # no slug maps to it: slugs are lower case
        ("notes/plan.txt", None),
        ("notes/plan.md.md", None),
        (".md", None),
        ("a//b.md", None),
    ],
)
def test_a_path_is_a_page_at_itself_or_without_md(path: str, slug: str | None) -> None:
    assert slug_of_path(path) == slug


def test_memories_and_deleted_documents_are_no_pages() -> None:
    assert page_slug(doc("memories/fact/m1.md", memory=True)) is None
    assert page_slug(doc("notes/gone.md", deleted=True)) is None
    assert page_slug(doc("notes/kept.md")) == "notes/kept"


def test_the_bare_path_is_preferred_and_shadows_the_markdown_file() -> None:
    bare, note = doc("notes/plan"), doc("notes/plan.md")
    assert pick("notes/plan", {"notes/plan": bare, "notes/plan.md": note}) is bare
    assert pick("notes/plan", {"notes/plan": None, "notes/plan.md": note}) is note
    assert pick("notes/plan", {"notes/plan.md": doc("notes/plan.md", memory=True)}) is None
    listed = unshadowed([note, bare, doc("notes/other.md"), doc("notes/Upper.md")])
    assert [(slug, d.path) for slug, d in listed] == [
        ("notes/plan", "notes/plan"),
        ("notes/other", "notes/other.md"),
    ]
