"""gbrain pages on documents (services/gbrain/pages.py), on the fake container."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput, NotFound, VersionConflict
from cairn.domain.models import Brain, MemoryType
from cairn.domain.pages import AmbiguousSlug, CollectionReadOnly, CollectionRestoring, InvalidSlug
from cairn.services.documents.inputs import keep_info
from cairn.services.gbrain.pages import PageService
from cairn.services.memory.memory_model import MemoryInput
from tests.fakes.container import fake_container

ALICE = "---\ntitle: Alice\ntype: person\n---\n# Alice\n\nAlice builds compilers.\n---\n2024: joined\n"


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.fixture
def pages(container: Container) -> PageService:
    return PageService(container.brains, container.documents)


@pytest.fixture
def work(container: Container) -> Brain:
    # the oldest brain: the write target, which gbrain calls `default`
    return container.brains.create("Work", slug="work")


@pytest.fixture
def personal(container: Container, work: Brain) -> Brain:
    return container.brains.create("Personal", slug="personal")


# -- put, get and versions -------------------------------------------------------------------------


def test_put_creates_at_version_1_and_get_renders_the_page(pages: PageService, work: Brain) -> None:
    created = pages.put("people/alice", ALICE)
    assert created.created and created.page.version == 1
    assert created.page.canonical == "default::people/alice"

    page = pages.get("people/alice")
    assert (page.title, page.type, page.summary, page.wing) == (
        "Alice",
        "person",
        "Alice builds compilers.",
        "people",
    )
    assert page.render() == (
        f"---\ngbrain_id: {page.gbrain_id}\nslug: default::people/alice\ntitle: Alice\ntype: person\n---\n"
        "# Alice\n\nAlice builds compilers.\n---\n2024: joined\n"
    )
    assert pages.get("work::people/alice").gbrain_id == page.gbrain_id  # the brain's own name works too
    assert pages.get("default::people/alice").canonical == "default::people/alice"


def test_updates_need_the_current_version_and_conflicts_carry_it(pages: PageService, work: Brain) -> None:
    pages.put("people/alice", ALICE)

    with pytest.raises(VersionConflict) as exists:
        pages.put("people/alice", ALICE + "more\n")
    assert exists.value.message == (
        "conflict: page already exists (current version: 1). Provide expected_version to update."
    )
    assert exists.value.current_version == 1

    updated = pages.put("people/alice", ALICE + "more\n", expected_version=1)
    assert not updated.created and updated.page.version == 2

    with pytest.raises(VersionConflict) as stale:
        pages.put("people/alice", ALICE, expected_version=1)
    assert stale.value.message == "conflict: page updated elsewhere (current version: 2)"
    assert stale.value.current_version == 2

    with pytest.raises(VersionConflict) as absent:
        pages.put("people/bob", ALICE, expected_version=3)
    assert absent.value.message == "conflict: page does not exist at version 3"
    assert absent.value.current_version is None
    assert pages.get("people/alice").version == 2


def test_every_successful_put_is_a_new_version_even_of_the_same_content(
    pages: PageService, work: Brain
) -> None:
    pages.put("a", "same")
    assert pages.put("a", "same", expected_version=1).page.version == 2
    assert pages.put("a", "same", expected_version=2).page.version == 3


def test_input_is_checked_in_order(pages: PageService, work: Brain) -> None:
    too_big = "x" * (1_048_576 + 1)
    with pytest.raises(InvalidSlug, match=r"allowed characters"):
        pages.put("Bad Slug", too_big)
    with pytest.raises(InvalidInput) as size:
        pages.put("ok", too_big)
    assert size.value.message == "content too large: 1048577 bytes exceeds maximum of 1048576 bytes"
    with pytest.raises(NotFound, match=r"^collection not found: nope$"):
        pages.put("nope::ok", "x")


# -- cross-surface: a page is a document --------------------------------------------------------


def test_a_put_page_is_a_document_read_by_the_store_and_found_by_search(
    container: Container, pages: PageService, work: Brain
) -> None:
    pages.put("people/alice", ALICE)
    assert container.documents.read(work, "people/alice") == ALICE.encode()
    assert container.documents.get(work, "people/alice").title == "Alice"
    container.documents.write(work, "notes/other.md", b"# Other\n\nNothing to see.\n")
    hits = container.search.search(work, "compilers").hits  # what memory_search runs
    assert hits[0].path == "people/alice" and hits[0].title == "Alice"


def test_a_document_written_at_a_slug_path_is_a_page(
    container: Container, pages: PageService, work: Brain
) -> None:
    container.documents.write(work, "notes/idea", b"# Idea\n\nWrite less code.\n")
    container.documents.write(work, "notes/Upper.md", b"# Not a page: no slug maps to the path\n")
    container.documents.write(work, "notes/other.txt", b"# Not a page: not Markdown\n")
    page = pages.get("notes/idea")
    assert (page.title, page.summary, page.version) == ("notes/idea", "Write less code.", 1)
    assert [p.slug for p in pages.list()] == ["notes/idea"]
    with pytest.raises(InvalidSlug):
        pages.get("notes/other.md")


def test_a_markdown_note_is_the_page_of_its_path_without_md(
    container: Container, pages: PageService, work: Brain
) -> None:
    # Given a note another surface wrote (memory_remember's path form)
    note = container.ingest.remember(work, "# Boiler\n\nThe boiler is serviced in June.")
    slug = note.path.removesuffix(".md")
    # When gbrain reads it / Then it is the page of that slug, at the document's version
    page = pages.get(slug)
    assert (page.canonical, page.summary, page.version) == (
        f"default::{slug}",
        "The boiler is serviced in June.",
        1,
    )
    assert [p.slug for p in pages.list()] == [slug]
    # a put updates the note where it is stored: one document, whichever surface reads it
    with pytest.raises(VersionConflict):
        pages.put(slug, "# Boiler\n\nServiced in July.")
    assert pages.put(slug, "# Boiler\n\nServiced in July.", expected_version=1).page.version == 2
    assert container.documents.read(work, note.path) == b"# Boiler\n\nServiced in July."
    assert pages.tags(slug, add=["house"]) == ["house"]
    assert container.documents.get(work, note.path).tags == ["house"]
    with pytest.raises(NotFound):
        container.documents.get(work, slug)


def test_a_bare_path_shadows_the_markdown_note_of_the_same_slug(
    container: Container, pages: PageService, work: Brain
) -> None:
    container.documents.write(work, "notes/plan.md", b"The note.")
    container.documents.write(work, "notes/plan", b"The page.")
    assert pages.get("notes/plan").document.path == "notes/plan"
    assert [(p.slug, p.document.path) for p in pages.list()] == [("notes/plan", "notes/plan")]
    assert pages.page_count(work) == 1


def test_memories_are_never_pages(container: Container, pages: PageService, work: Brain) -> None:
    memory = container.memories.store(
        work, MemoryInput(type=MemoryType.fact, content="The staging database lives in eu-west-1.", key="db")
    ).memory
    assert memory.path.endswith(".md") and memory.memory is not None
    with pytest.raises(NotFound):
        pages.get(memory.path.removesuffix(".md"))
    assert pages.list() == [] and pages.page_count(work) == 0


# -- resolution across collections ----------------------------------------------------------------


def test_bare_slugs_resolve_to_the_one_collection_holding_them(
    pages: PageService, work: Brain, personal: Brain
) -> None:
    pages.put("personal::diary/today", "dear diary")
    assert pages.get("diary/today").canonical == "personal::diary/today"

    with pytest.raises(NotFound, match=r"^page not found: missing$"):
        pages.get("missing")
    with pytest.raises(NotFound, match=r"^page not found: default::diary/today$"):
        pages.get("work::diary/today")
    with pytest.raises(NotFound, match=r"^collection not found: other$"):
        pages.get("other::diary/today")

    pages.put("work::diary/today", "work diary")
    with pytest.raises(AmbiguousSlug) as ambiguous:
        pages.get("diary/today")
    assert ambiguous.value.message == "AmbiguityError: slug `diary/today` matches multiple collections"
    assert ambiguous.value.candidates == ["default::diary/today", "personal::diary/today"]


def test_bare_creates_go_to_the_write_target_unless_another_collection_holds_the_slug(
    pages: PageService, work: Brain, personal: Brain
) -> None:
    assert pages.put("ideas/one", "one").page.canonical == "default::ideas/one"

    pages.put("personal::ideas/two", "two")
    with pytest.raises(AmbiguousSlug) as ambiguous:
        pages.put("ideas/two", "another two")
    assert ambiguous.value.candidates == ["default::ideas/two", "personal::ideas/two"]
    # an update of a bare slug goes to the one collection holding it
    assert pages.put("ideas/two", "two, again", expected_version=1).page.canonical == "personal::ideas/two"


def test_default_names_the_write_target_when_no_brain_is_called_default(
    container: Container, pages: PageService, work: Brain, personal: Brain
) -> None:
    assert pages.put("default::x", "x").page.canonical == "default::x"
    assert pages.get("work::x").canonical == "default::x"
    assert [pages.name_of(b) for b in pages.collections()] == ["default", "personal"]
    # a brain really called `default` is the default collection, and the write target its own name
    named = container.brains.create("Default", slug="default")
    assert pages.collection("default").id == named.id
    assert pages.get("work::x").canonical == "work::x"
    assert [pages.name_of(b) for b in pages.collections()] == ["work", "personal", "default"]


# -- collection write gates -----------------------------------------------------------------------


def test_a_restoring_collection_refuses_mutations_before_anything_else(
    pages: PageService, work: Brain
) -> None:
    pages.put("people/alice", ALICE)
    pages.set_state(work, state="restoring")
    expected = "CollectionRestoringError: collection=default state=restoring needs_full_sync=false"
    for attempt in (
        lambda: pages.put("people/alice", ALICE, expected_version=1),
        lambda: pages.put("work::Not A Slug", "x"),  # before the slug is validated
        lambda: pages.put("people/bob", "x" * 2_000_000),  # before the size is checked
        lambda: pages.put("people/alice", ALICE, expected_version=9),  # before the version check
        lambda: pages.tags("people/alice", add=["Not A Tag"]),
    ):
        with pytest.raises(CollectionRestoring) as refused:
            attempt()
        assert refused.value.message == expected
    # reads go on
    assert pages.get("people/alice").version == 1
    assert pages.tags("people/alice") == []

    pages.set_state(work, state="active", needs_full_sync=True)
    with pytest.raises(CollectionRestoring, match=r"state=active needs_full_sync=true$"):
        pages.put("people/alice", ALICE, expected_version=1)
    pages.set_state(work, needs_full_sync=False)
    assert pages.put("people/alice", ALICE, expected_version=1).page.version == 2


def test_a_read_only_collection_refuses_mutations_after_validation(pages: PageService, work: Brain) -> None:
    pages.put("people/alice", ALICE)
    pages.set_state(work, writable=False)
    with pytest.raises(InvalidSlug):
        pages.put("Bad Slug", "x")
    with pytest.raises(CollectionReadOnly, match=r"^CollectionReadOnlyError: collection=default$"):
        pages.put("people/alice", ALICE, expected_version=1)
    with pytest.raises(CollectionReadOnly):
        pages.tags("people/alice", add=["x"])
    assert pages.get("people/alice").version == 1


# -- tags, list, timeline -------------------------------------------------------------------------


def test_tags_are_the_document_tags_and_a_change_is_a_new_version(
    container: Container, pages: PageService, work: Brain
) -> None:
    pages.put("people/alice", ALICE)
    assert pages.tags("people/alice", add=["founder", "engineer"]) == ["engineer", "founder"]
    assert container.documents.get(work, "people/alice").tags == ["engineer", "founder"]
    assert pages.get("people/alice").version == 2
    assert pages.tags("people/alice", add=["founder"]) == ["engineer", "founder"]  # no change
    assert pages.get("people/alice").version == 2

    pages.put("people/alice", ALICE + "more\n", expected_version=2)  # a put keeps the tags
    assert pages.tags("people/alice") == ["engineer", "founder"]
    assert pages.tags("people/alice", remove=["engineer", "founder"]) == []
    assert container.documents.get(work, "people/alice").tags == []
    assert pages.get("people/alice").version == 4
    with pytest.raises(InvalidInput, match=r"invalid tag"):
        pages.tags("people/alice", add=["Nope!"])
    with pytest.raises(NotFound, match=r"page not found: default::nobody"):
        pages.tags("nobody", add=["x"])


def test_a_page_holds_at_most_a_thousand_tags(container: Container, pages: PageService, work: Brain) -> None:
    """100 tags a call, called again and again, grew a page past what a DynamoDB item holds."""
    pages.put("people/alice", ALICE)
    for call in range(10):
        pages.tags("people/alice", add=[f"t{call:02d}-{n:03d}-{'x' * 52}" for n in range(100)])
    with pytest.raises(InvalidInput, match=r"a page holds at most 1000"):
        pages.tags("people/alice", add=["one-more"])
    assert len(container.documents.get(work, "people/alice").tags) == 1000
    assert pages.tags("people/alice", add=["one-more"], remove=["t00-000-" + "x" * 52]).count("one-more") == 1
    with access.as_system():  # a page tagged past the cap before it existed may still shed tags
        doc = container.documents.get(work, "people/alice")
        more = [*doc.tags, *(f"z{n:03d}" for n in range(200))]
        container.documents.write(
            work, doc.path, container.documents.content(doc), replace(keep_info(doc), tags=more)
        )
    assert len(pages.tags("people/alice", remove=[f"z{n:03d}" for n in range(100)])) == 1100


def test_list_filters_by_wing_and_type_newest_first(pages: PageService, work: Brain) -> None:
    pages.put("people/alice", ALICE)
    pages.put("people/bob", "---\ntype: person\n---\nBob.")
    pages.put("companies/acme", "---\ntype: company\n---\nAcme.")
    pages.put("loose", "No wing.")
    pages.put("general/thing", "In the general wing by name.")
    pages.put("people/alice", ALICE + "touched\n", expected_version=1)

    assert [p.slug for p in pages.list()] == [
        "people/alice",
        "general/thing",
        "loose",
        "companies/acme",
        "people/bob",
    ]
    assert [p.slug for p in pages.list(wing="people")] == ["people/alice", "people/bob"]
    assert [p.slug for p in pages.list(wing="general")] == ["general/thing", "loose"]
    assert [p.slug for p in pages.list(page_type="person")] == ["people/alice", "people/bob"]
    assert [p.slug for p in pages.list(page_type="concept")] == ["general/thing", "loose"]
    assert [p.slug for p in pages.list(limit=2)] == ["people/alice", "general/thing"]
    with pytest.raises(NotFound, match=r"collection not found: nope"):
        pages.list("nope")


def test_timeline_entries(pages: PageService, work: Brain) -> None:
    pages.put("p", "truth\n---\n2024-01: one\n---\n2024-02: two\n---\n\n")
    assert pages.timeline("p") == ["2024-01: one", "2024-02: two"]
    assert pages.timeline("p", limit=1) == ["2024-01: one"]
    pages.put("q", "no timeline")
    assert pages.timeline("q") == []
