"""The bytes of a write that stopped between storing them and committing its record (no record
names their document, so neither the old-bytes log nor an erasure reaches them) are collected
once past their grace (services/documents/orphan_bytes.py), on the embedded store whose files the
sweep can list; a document with a record keeps its bytes, deleted or not, and a write in flight
keeps its own."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.ports.clock import SystemClock
from cairn.services.documents import orphan_bytes
from cairn.services.documents.index_sweeper import IndexSweeper
from tests.support.shapes import embedded

SECRET = b"# Scout\n\nThe scout's private note that never got its record."


@pytest.fixture
def container(tmp_path: Path) -> Container:
    data = tmp_path / "data"
    return build_container(Settings(data_dir=data), replace(embedded(data), clock=SystemClock()))


def _killed_write(container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch, path: str) -> Path:
    """A write whose process died at its commit: its bytes stored, no record; the folder they are in."""
    records = container.adapters.records
    commit = records.transact

    def dies(ops: object) -> object:
        raise RuntimeError("killed at the commit")

    monkeypatch.setattr(records, "transact", dies)
    with pytest.raises(RuntimeError):
        container.documents.write(brain, path, SECRET)
    monkeypatch.setattr(records, "transact", commit)
    root = Path(container.adapters.blobs.root) / brain.id / "doc"  # type: ignore[attr-defined]
    (folder,) = [f for f in root.iterdir() if any(p.read_bytes() == SECRET for p in f.iterdir())]
    return folder


def _aged(folder: Path, seconds: float) -> None:
    then = time.time() - seconds
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (then, then))


def test_bytes_no_record_names_go_after_their_grace_and_recorded_ones_stay(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = container.brains.create("Scouts", slug="scouts")
    kept = container.documents.write(brain, "memory/agent/scout/a.md", b"# A\n\nkept").document
    gone = container.documents.write(brain, "memory/agent/scout/b.md", b"# B\n\nsoft-deleted").document
    container.documents.delete(brain, "memory/agent/scout/b.md")
    orphan = _killed_write(container, brain, monkeypatch, "memory/agent/scout/big.md")
    blobs = container.adapters.blobs
    # Within the grace the folder stays: its write may still be on its way to its commit
    assert container.documents.collect_orphan_bytes() == 0 and orphan.exists()
    # Past it, only the folder no record names goes; the live and the soft-deleted documents keep theirs
    for folder in orphan.parent.iterdir():
        _aged(folder, orphan_bytes.GRACE_S + 60)
    assert container.documents.collect_orphan_bytes() == 1
    assert not orphan.exists()
    assert blobs.exists(kept.blob_key) and blobs.exists(gone.blob_key)
    assert container.documents.read(brain, "memory/agent/scout/a.md") == b"# A\n\nkept"


def test_the_sweep_collects_them_once_an_hour(container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    brain = container.brains.create("Scouts", slug="scouts")
    calls: list[float] = []
    monkeypatch.setattr(container.documents, "collect_orphan_bytes", lambda: calls.append(1) or 0)
    sweeper = IndexSweeper(container.documents)
    sweeper.tick()
    sweeper.tick()
    assert calls == [1]  # the first tick, then not again within the hour
    _aged(_killed_write(container, brain, monkeypatch, "notes/x.md"), orphan_bytes.GRACE_S + 60)
    monkeypatch.undo()
    sweeper._orphans_at = time.monotonic() - orphan_bytes.EVERY_S  # an hour later
    sweeper.tick()
    assert not any((Path(container.adapters.blobs.root) / brain.id / "doc").iterdir())  # type: ignore[attr-defined]
