"""Whole-brain archives (services/archive/) while another writer works on the brain: a restore
never reverts a write committed between its check and its own write, an export holds every
document once however they are renamed while it pages through them. Deterministic: the other
writer's change is made at the very moment it would race, on the fakes and on SQLite."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Adapters, Container, build_container
from cairn.config import Settings
from tests.fakes.container import fake_adapters
from tests.support.archive_scenario import exported, fill

DIM = 64


@pytest.fixture(params=["fakes", "sqlite"])
def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> Adapters:
    if request.param == "fakes":
        return fake_adapters(DIM)
    return replace(
        fake_adapters(DIM),
        records=SqliteRecordStore(tmp_path / "records.sqlite3"),
        blobs=FileBlobStore(tmp_path / "blobs"),
        chunks=SqliteChunkIndex(tmp_path / "chunks.sqlite3", tmp_path / "vectors", DIM),
    )


def container(adapters: Adapters, tmp_path: Path) -> Container:
    return build_container(Settings(data_dir=tmp_path), adapters)


def test_a_write_committed_between_the_restores_check_and_its_write_is_kept(
    adapters: Adapters, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    restoring = container(adapters, tmp_path)
    serving = container(adapters, tmp_path)  # another process on the same store: its own path locks
    brain = fill(restoring).brain
    restoring.documents.write(brain, "notes/plain.md", b"# Plain\n\nOld local text.\n")
    adapters.clock.advance(60)  # type: ignore[attr-defined]
    archived = store_text(exported(restoring, brain), "notes/plain.md", "# Plain\n\nThe archived text.\n")
    newer = b"# Plain\n\nNewer work the server acknowledged.\n"
    commit = restoring.documents.repo.commit

    def racing(ops: Any, **kw: Any) -> Any:
        if any(getattr(op, "item", None) and "notes/plain.md" in op.item.sk for op in ops):
            monkeypatch.setattr(restoring.documents.repo, "commit", commit)  # once
            adapters.clock.advance(60)  # type: ignore[attr-defined]
            serving.documents.write(brain, "notes/plain.md", newer)
        return commit(ops, **kw)

    monkeypatch.setattr(restoring.documents.repo, "commit", racing)
    report = restoring.archive.import_(None, archived)

    held = restoring.documents.get(brain, "notes/plain.md")
    assert restoring.documents.content(held) == newer
    assert [k.split(": ", 1)[1] for k in report.kept] == ["'notes/plain.md'"]
    assert report.errors == []


def store_text(records: list[dict[str, Any]], path: str, text: str) -> list[dict[str, Any]]:
    """The archive with `path`'s document holding `text` instead."""
    return [{**r, "content": text} if r.get("path") == path else r for r in records]
