"""An erase that loses its commit to another writer finishes (services/documents/writes.py
`_erase_locked`), on every record store. The erase removes the document's folder before its record;
another process writing the document between the two (its record rewritten, new bytes written into
its folder, a rename) fails the erase's commit at the version read. The erase reads the document
again by its id and goes again: nothing of it is left, no record without its bytes. A new document
another process writes at the path meanwhile (a deleted document's path: a new id, a folder of its
own) is another document, and it stays whole."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cairn import faults
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Document
from cairn.ports.records import RecordStore
from cairn.services.documents.blob_keys import own_folder
from cairn.services.documents.inputs import DocumentInput
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.container import fake_adapters

PATH = "notes/lamp.md"
TEXT = b"The keeper lit the lamp at six and logged the fog horn tested at seven."


@pytest.fixture
def two(records: RecordStore, tmp_path: Path) -> tuple[Container, Container]:
    """Two processes over the same stores (each its own services and path locks)."""
    adapters = replace(fake_adapters(), records=records)
    settings = Settings(data_dir=tmp_path / "data")
    return build_container(settings, adapters), build_container(settings, adapters)


def stored(c: Container) -> tuple[Brain, Document]:
    brain = c.brains.create("Shore", slug="shore")
    c.documents.write(brain, PATH, TEXT)
    doc = c.documents.repo.stored(brain.id, PATH)
    assert doc is not None and own_folder(doc) is not None
    return brain, doc


def keys_under(c: Container, folder: str) -> list[str]:
    blobs = c.adapters.blobs
    assert isinstance(blobs, MemoryBlobStore)
    return [key for key in blobs.items if key.startswith(folder)]


def assert_gone(c: Container, brain: Brain, doc: Document) -> None:
    assert_gone_but(c, brain, doc)


def assert_gone_but(c: Container, brain: Brain, doc: Document, *kept: Document) -> None:
    """Nothing left of `doc`; the brain's other documents are `kept`."""
    folder = own_folder(doc)
    assert folder is not None
    assert c.documents.repo.stored_by_id(doc.id) is None
    assert sorted(d.id for d in c.documents.repo.list(brain.id)) == sorted(d.id for d in kept)
    assert keys_under(c, folder) == []
    assert c.adapters.chunks.get_chunks(brain.id, doc.id) == []
    assert list(c.documents.repo.intents.pending()) == []


def rewritten(other: Container, brain: Brain, doc: Document) -> Callable[[], None]:
    """Its record written again at its version, bytes untouched (a metadata change)."""
    changed = doc.model_copy(update={"metadata": {"reviewed": "yes"}})
    return lambda: other.documents.repo.commit([other.documents.repo.put_op(changed, doc.version)])


def renamed(other: Container, brain: Brain, doc: Document) -> Callable[[], None]:
    """Moved to another path: the commit of a rename that read the bytes before they went."""
    repo = other.documents.repo
    moved = doc.model_copy(update={"path": "notes/moved.md"})
    return lambda: repo.commit([repo.put_op(moved, 0), repo.pointer_op(moved), repo.remove_op(doc)])


MEANWHILE: dict[str, Callable[[Container, Brain, Document], Callable[[], None]]] = {
    "record rewritten": rewritten,
    "new bytes written": lambda other, brain, _doc: (
        lambda: other.documents.write(brain, PATH, TEXT + b" Again.")
    ),
    "renamed": renamed,
}


@pytest.mark.parametrize("meanwhile", list(MEANWHILE))
def test_an_erase_whose_commit_loses_to_another_writer_finishes(
    two: tuple[Container, Container], meanwhile: str
) -> None:
    c, other = two
    brain, doc = stored(c)
    with faults.armed("documents.bytes_erased", action=MEANWHILE[meanwhile](other, brain, doc)):
        erased = c.documents.erase(brain, PATH)
    assert erased is not None and erased.document is not None and erased.document.id == doc.id
    # committed where the other writer left it: at its new version, or its new path
    assert (erased.document.path, erased.document.version) != (doc.path, doc.version)
    assert_gone(c, brain, doc)


def test_a_new_document_written_at_the_path_meanwhile_is_left_whole(two: tuple[Container, Container]) -> None:
    c, other = two
    brain, doc = stored(c)
    c.documents.delete(brain, PATH)  # an erasure erases soft-deleted documents too
    fresh = b"A new note at the same path, written by another process."
    with faults.armed("documents.bytes_erased", action=lambda: other.documents.write(brain, PATH, fresh)):
        erased = c.documents.erase(brain, PATH)
    # what it was asked to erase was no longer there; the bytes it took before it found that count
    assert erased is not None and erased.document is None and erased.blobs == 1
    new = c.documents.repo.stored(brain.id, PATH)
    assert new is not None and new.id != doc.id and new.deleted_at is None
    assert c.documents.read(brain, PATH) == fresh
    assert c.documents.repo.stored_by_id(doc.id) is None
    old_folder = own_folder(doc)
    assert old_folder is not None and keys_under(c, old_folder) == []


def test_an_id_taken_in_another_brain_meanwhile_is_not_followed(two: tuple[Container, Container]) -> None:
    """Erased by another process meanwhile, its id free again, then given to a document of another
    brain (an archive restored with its ids, a memory written with its own): that is another
    brain's document, which the erase neither checks against its own brain's rules nor touches."""
    c, other = two
    brain, doc = stored(c)
    elsewhere = other.brains.create("Harbour", slug="harbour")
    kept = b"The harbour's own note, which took the freed id."

    def meanwhile() -> None:
        assert other.documents.erase(brain, PATH) is not None
        other.documents.write(elsewhere, "notes/quay.md", kept, DocumentInput(doc_id=doc.id))

    with faults.armed("documents.bytes_erased", action=meanwhile):
        erased = c.documents.erase(brain, PATH)
    # erased by the other process, after this one took its bytes: those are counted here
    assert erased is not None and erased.document is None and erased.blobs == 1
    taken = c.documents.repo.stored_by_id(doc.id)
    assert taken is not None and taken.brain_id == elsewhere.id
    assert c.documents.read(elsewhere, "notes/quay.md") == kept
    assert c.adapters.chunks.get_chunks(elsewhere.id, doc.id) != []


def test_an_erasure_erases_what_it_read_though_another_document_moved_to_its_path(
    two: tuple[Container, Container],
) -> None:
    """Between an erasure's scan and its erase, another process moves the doomed document away and
    another document into its path: the doomed one is erased where it is now, the other stays."""
    c, other = two
    brain, doomed = stored(c)
    kept_text = b"A note the erasure did not select, moved in by another process."
    c.documents.write(brain, "notes/kept.md", kept_text)
    kept = c.documents.repo.stored(brain.id, "notes/kept.md")
    assert kept is not None
    other.documents.rename(brain, PATH, "notes/away.md")
    other.documents.rename(brain, "notes/kept.md", PATH)

    counts = c.erasure.eraser.erase(brain, [doomed], [kept])

    assert counts["documents"] == 1
    assert_gone_but(c, brain, doomed, kept)
    assert c.documents.read(brain, PATH) == kept_text
    moved = c.documents.repo.stored(brain.id, PATH)
    assert moved is not None and moved.id == kept.id
    assert c.adapters.chunks.get_chunks(brain.id, kept.id) != []
