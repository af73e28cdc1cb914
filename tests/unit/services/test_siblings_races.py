"""A folder's recent siblings (services/documents/siblings.py) while another process writes into the
same folder: no document's entry is lost from them. Deterministic: the other process's write is made
at the very moment it would race (between this one's read of the siblings and its commit), on the
fakes and on SQLite (on DynamoDB: tests/integration/aws/test_siblings_races_on_aws.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.ports.records import Put
from cairn.services.repositories import documents_pk
from tests.fakes.container import fake_adapters

DIM = 64


@pytest.fixture(params=["fakes", "sqlite"])
def process(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Container]]:
    """A new container over one store each call, as another process on it: its own folder locks."""
    adapters = fake_adapters(DIM)
    if request.param == "sqlite":
        adapters = replace(
            adapters,
            records=SqliteRecordStore(tmp_path / "records.sqlite3"),
            blobs=FileBlobStore(tmp_path / "blobs"),
            chunks=SqliteChunkIndex(tmp_path / "chunks.sqlite3", tmp_path / "vectors", DIM),
        )
    yield lambda: build_container(Settings(data_dir=tmp_path), adapters)


def ring_paths(c: Container, brain: Brain, folder: str) -> set[str]:
    item = c.adapters.records.get(documents_pk(brain.id), f"siblings#{folder}/")
    return {e["path"] for e in item.data["entries"]} if item else set()


def folder_paths(c: Container, brain: Brain, folder: str) -> set[str]:
    items = c.adapters.records.query(documents_pk(brain.id), f"doc#{folder}/").items
    return {i.sk.removeprefix("doc#") for i in items}


def context_of(c: Container, brain: Brain, path: str) -> str:
    doc = c.documents.get(brain, path)
    return c.adapters.chunks.get_chunks(brain.id, doc.id)[0].context or ""


def racing_once(mine: Container, theirs: Callable[[], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """`theirs` runs once, just before `mine` commits a write of a folder's recent siblings (it
    has read them already)."""
    commit = mine.documents.repo.commit

    def racing(ops: Any, **kw: Any) -> Any:
        if any(isinstance(op, Put) and op.item.sk.startswith("siblings#") for op in ops):
            monkeypatch.setattr(mine.documents.repo, "commit", commit)
            theirs()
        return commit(ops, **kw)

    monkeypatch.setattr(mine.documents.repo, "commit", racing)


def test_a_sibling_another_process_writes_meanwhile_keeps_its_entry(
    process: Callable[[], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = process(), process()
    brain = mine.brains.create("Chat", slug="chat")
    mine.documents.write(brain, "chat/turn-1.md", b"how is the marathon training going")
    racing_once(
        mine,
        lambda: other.documents.write(brain, "chat/turn-2.md", b"great, my knees stopped hurting"),
        monkeypatch,
    )
    written = mine.documents.write(brain, "chat/turn-3.md", b"glad to hear it")

    assert ring_paths(mine, brain, "chat") == folder_paths(mine, brain, "chat")
    assert mine.documents.content(written.document) == b"glad to hear it"  # its staged bytes stand
    assert context_of(mine, brain, "chat/turn-3.md") == "great, my knees stopped hurting"
    assert context_of(mine, brain, "chat/turn-2.md") == "how is the marathon training going"


def test_a_sibling_that_lands_before_the_write_repoints_it(
    process: Callable[[], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other process's document falls between this one and its predecessor: linked again, this
    one takes the other's excerpt, not the one it read first."""
    mine, other = process(), process()
    brain = mine.brains.create("Chat", slug="chat")
    mine.documents.write(brain, "chat/turn-1.md", b"first turn")
    racing_once(mine, lambda: other.documents.write(brain, "chat/turn-3.md", b"third turn"), monkeypatch)
    mine.documents.write(brain, "chat/turn-2.md", b"second turn")

    assert ring_paths(mine, brain, "chat") == {"chat/turn-1.md", "chat/turn-2.md", "chat/turn-3.md"}
    assert context_of(mine, brain, "chat/turn-2.md") == "first turn"
    assert context_of(mine, brain, "chat/turn-3.md") == "second turn"  # repointed by the retry
