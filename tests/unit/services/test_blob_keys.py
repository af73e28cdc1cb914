"""Where a document's bytes live (services/documents/blob_keys.py): each version in a folder of the
document's own, which an erase takes whole; an id that cannot name a folder, and documents written
before the layout, keep the brain's content address."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn import faults
from cairn.services.documents.blob_keys import blob_key, own_folder
from tests.fakes.container import fake_container

SHA = "ab" * 32


def test_a_plain_id_gets_a_folder_and_an_unsafe_one_the_brains_content_address() -> None:
    first, again = blob_key("brn_1", "doc_01abc", SHA), blob_key("brn_1", "doc_01abc", SHA)
    assert first.startswith("brn_1/doc/doc_01abc/") and first.endswith(f"-{SHA}")
    assert first != again  # the same bytes written again get a key of their own
    for unsafe in ("../x", "a/b", "", "é", "x" * 129, "a b"):
        assert blob_key("brn_1", unsafe, SHA) == f"brn_1/ab/{SHA}", unsafe


def test_every_version_stays_until_the_document_is_erased_then_none_does(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    brain = c.brains.create("Notes")
    first = c.documents.write(brain, "notes/vault.md", b"# Vault\n\nThe code is ochre-4417.").document
    second = c.documents.write(brain, "notes/vault.md", b"# Vault\n\nThe code was rotated.").document
    blobs = c.adapters.blobs
    folder = own_folder(second)

    assert folder == f"{brain.id}/doc/{second.id}/" and first.id == second.id
    assert first.blob_key.startswith(folder) and second.blob_key.startswith(folder)
    assert blobs.get(first.blob_key).endswith(b"ochre-4417.")  # a reader of the older record still reads
    erased = c.documents.erase(brain, "notes/vault.md")
    assert erased is not None and erased.blobs == 2
    assert not blobs.exists(first.blob_key) and not blobs.exists(second.blob_key)


def test_a_document_at_the_brains_content_address_has_no_folder_to_take(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    brain = c.brains.create("Notes")
    doc = c.documents.write(brain, "notes/old.md", b"# Old\n\nWritten before folders.").document
    sha = doc.checksum_sha256
    legacy = doc.model_copy(update={"blob_key": f"{brain.id}/{sha[:2]}/{sha}"})

    assert own_folder(doc) is not None and own_folder(legacy) is None  # its bytes may be shared
    assert own_folder(legacy.model_copy(update={"id": "../x"})) is None


def test_an_erasure_stopped_once_a_record_went_leaves_no_version_behind(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    brain = c.brains.create("Notes")
    path = "memory/agent/scout/vault.md"
    c.documents.write(brain, path, b"# Vault\n\nThe code is ochre-4417.")
    c.documents.write(brain, path, b"# Vault\n\nThe code was rotated.")
    items = c.adapters.blobs.items  # type: ignore[attr-defined]

    # When the process dies right after the document's record went (its bytes not yet removed)
    with faults.armed("documents.committed"), pytest.raises(faults.InjectedFault):
        c.erasure.erase("agent_scope", "scout")
    finished = c.erasure.resume()  # as the next start does

    # Then the erasure finishes and no version of the document's bytes is left
    assert [r.status for r in finished] == ["completed"]
    assert not c.documents.exists(brain, path)
    assert [k for k, v in items.items() if b"ochre-4417" in v or b"rotated" in v] == []
