"""Whole-brain archives (services/archive/) while another writer works on the brain: a restore
never reverts a write committed between its check and its own write, an export holds every
document once however they are renamed while it pages through them. Deterministic: the other
writer's change is made at the very moment it would race, on the fakes and on SQLite."""

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
from cairn.domain.models import Document, MemoryType
from cairn.services import repositories
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.repositories import documents_pk
from tests.fakes.container import fake_adapters
from tests.support.archive_scenario import exported, fill

DIM = 64


@pytest.fixture(params=["fakes", "sqlite"])
def process(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Container]]:
    """A new container over one store each call, as another process on it: its own path locks
    (on DynamoDB: tests/integration/aws/test_archive_races_on_aws.py)."""
    adapters = fake_adapters(DIM)
    if request.param == "sqlite":
        adapters = replace(
            adapters,
            records=SqliteRecordStore(tmp_path / "records.sqlite3"),
            blobs=FileBlobStore(tmp_path / "blobs"),
            chunks=SqliteChunkIndex(tmp_path / "chunks.sqlite3", tmp_path / "vectors", DIM),
        )
    yield lambda: build_container(Settings(data_dir=tmp_path), adapters)


def test_a_write_committed_between_the_restores_check_and_its_write_is_kept(
    process: Callable[[], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    restoring, serving = process(), process()  # serving: `cairn serve` on the same store
    clock = restoring.adapters.clock
    brain = fill(restoring).brain
    restoring.documents.write(brain, "notes/plain.md", b"# Plain\n\nOld local text.\n")
    clock.advance(60)  # type: ignore[attr-defined]
    archived = store_text(exported(restoring, brain), "notes/plain.md", "# Plain\n\nThe archived text.\n")
    newer = b"# Plain\n\nNewer work the server acknowledged.\n"
    commit = restoring.documents.repo.commit

    def racing(ops: Any, **kw: Any) -> Any:
        if any(getattr(op, "item", None) and "notes/plain.md" in op.item.sk for op in ops):
            monkeypatch.setattr(restoring.documents.repo, "commit", commit)  # once
            clock.advance(60)  # type: ignore[attr-defined]
            serving.documents.write(brain, "notes/plain.md", newer)
        return commit(ops, **kw)

    monkeypatch.setattr(restoring.documents.repo, "commit", racing)
    report = restoring.archive.import_(None, archived)

    held = restoring.documents.get(brain, "notes/plain.md")
    assert restoring.documents.content(held) == newer
    assert [k.split(": ", 1)[1] for k in report.kept] == ["'notes/plain.md'"]
    assert report.errors == []


def test_a_raw_row_stored_between_the_restores_check_and_its_write_is_kept(
    process: Callable[[], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    restoring, serving = process(), process()
    clock = restoring.adapters.clock
    brain = fill(restoring).brain
    archived = exported(restoring, brain)
    (raw,) = [r for r in archived if r["kind"] == "raw"]
    page = restoring.documents.get(brain, raw["path"])
    restoring.raw_data.remove_all_of(brain, page.id)  # the restore finds no row: it writes the archive's
    newer = {"fetched": "after the archive was made"}
    raw_data = restoring.archive.raw_data
    get = raw_data.get

    def racing(*args: Any) -> Any:
        held = get(*args)
        if args[2] == raw["source"]:
            monkeypatch.setattr(raw_data, "get", get)  # once
            clock.advance(60)  # type: ignore[attr-defined]
            serving.raw_data.put(brain, page.id, raw["source"], newer, overwrite=True)
        return held

    monkeypatch.setattr(raw_data, "get", racing)
    report = restoring.archive.import_(None, archived)

    assert restoring.raw_data.get(brain, page.id, raw["source"])[1] == newer  # type: ignore[index]
    assert [k.split(": ", 1)[1] for k in report.kept] == [f"'{raw['path']}' ('{raw['source']}' raw data)"]
    assert report.errors == []


def store_text(records: list[dict[str, Any]], path: str, text: str) -> list[dict[str, Any]]:
    """The archive with `path`'s document holding `text` instead."""
    return [{**r, "content": text} if r.get("path") == path else r for r in records]


def test_a_document_renamed_while_the_export_pages_through_the_brain_is_held_once(
    process: Callable[[], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    c = process()
    brain = c.brains.create("Paged", slug="paged")
    ids = {
        name: c.documents.write(brain, f"notes/{name}.md", f"# {name}\n\nText {name}.\n".encode()).document.id
        for name in "bcdefg"
    }
    monkeypatch.setattr(repositories, "ITEMS_PER_PAGE", 2)
    records = c.documents.repo.records
    query = records.query

    def renaming(pk: str, prefix: str = "", **kw: Any) -> Any:
        page = query(pk, prefix, **kw)
        if pk == documents_pk(brain.id) and prefix == "doc#":  # the first page read: b and c
            monkeypatch.setattr(records, "query", query)  # once
            c.documents.rename(brain, "notes/g.md", "notes/a.md")  # to a page already read
            c.documents.rename(brain, "notes/c.md", "notes/z.md")  # to a page not read yet
        return page

    monkeypatch.setattr(records, "query", renaming)
    exported_ids = [r["id"] for r in exported(c, brain) if r["kind"] == "document"]

    assert sorted(exported_ids) == sorted(ids.values())  # each once, g under its new path too


def test_a_document_or_memory_erased_while_the_export_reads_it_is_left_out_not_the_export_failed(
    process: Callable[[], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    exporting, serving = process(), process()
    brain = exporting.brains.create("Erased meanwhile", slug="erased")
    for name in "abc":
        exporting.documents.write(brain, f"notes/{name}.md", f"# {name}\n\nText {name}.\n".encode())
    fact = exporting.memories.store(brain, MemoryInput(MemoryType.fact, "The pump runs at 4 bar", key="pump"))
    content, text = exporting.documents.content, exporting.memories.text

    def erasing_first(read: Callable[[Document], Any], doc: Document) -> Any:
        if doc.path == "notes/b.md" or doc.id == fact.memory.id:  # listed, then erased before its read
            serving.documents.erase(brain, doc.path)
        return read(doc)

    monkeypatch.setattr(exporting.documents, "content", lambda doc: erasing_first(content, doc))
    monkeypatch.setattr(exporting.memories, "text", lambda doc: erasing_first(text, doc))
    records = exported(exporting, brain)

    assert sorted(r["path"] for r in records if r["kind"] == "document") == ["notes/a.md", "notes/c.md"]
    assert not [r for r in records if r["kind"] == "memory"]
    assert records[-1] == {"kind": "end", "records": len(records) - 2}
