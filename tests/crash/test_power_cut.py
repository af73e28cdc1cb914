"""A power cut mid-write (tests/support/power_cut.py): the disk keeps each of Cairn's files as of its
last fsync, loses the rest, and the process dies there. Opened again (settled and compared, as a
server or `cairn check` does), the copy holds every write acknowledged before the cut, found by
both legs, and an index that matches its records, wherever among the workload's fsyncs the power
went: single writes, a batch, a delete and a compaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.faults import InjectedFault
from cairn.services.documents.inputs import BatchOp
from tests.support.power_cut import Disk
from tests.support.soundness import assert_sound, note, opened

pytestmark = pytest.mark.integration
CUTS = 14


@dataclass
class Seen:
    acknowledged: dict[str, str] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    in_flight: dict[str, str] = field(default_factory=dict)


def workload(container: Container, seen: Seen) -> None:
    brain = container.brains.resolve("shore")
    documents = container.documents
    for n in range(10, 13):
        seen.in_flight = {f"notes/{n}.md": note(n, 1)}
        documents.write(brain, f"notes/{n}.md", note(n, 1).encode())
        seen.acknowledged.update(seen.in_flight)
    seen.in_flight = {f"notes/{n}.md": note(n, 2) for n in range(4, 16)}
    documents.batch(brain, [BatchOp("write", path, text.encode()) for path, text in seen.in_flight.items()])
    seen.acknowledged.update(seen.in_flight)
    seen.in_flight = {}
    documents.delete(brain, "notes/1.md")
    seen.acknowledged.pop("notes/1.md")
    seen.gone.add("notes/1.md")
    container.adapters.chunks.compact(brain.id)  # type: ignore[attr-defined]
    for n in range(16, 19):
        seen.in_flight = {f"notes/{n}.md": note(n, 3)}
        documents.write(brain, f"notes/{n}.md", note(n, 3).encode())
        seen.acknowledged.update(seen.in_flight)
    seen.in_flight = {}


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut_at: int | None) -> tuple[Disk, Seen]:
    data = tmp_path / "data"
    disk = Disk(data, tmp_path / "kept")
    monkeypatch.setattr(os, "fsync", disk.fsync)
    monkeypatch.setattr(os, "replace", disk.replace)
    data.mkdir()
    container = opened(data)
    brain = container.brains.create("Shore")
    seen = Seen()
    for n in range(10):
        container.documents.write(brain, f"notes/{n}.md", note(n).encode())
        seen.acknowledged[f"notes/{n}.md"] = note(n)
    disk.arm(cut_at)
    try:
        workload(container, seen)
    except InjectedFault:
        assert disk.cut
    monkeypatch.undo()
    return disk, seen


@pytest.fixture(scope="module")
def fsyncs(tmp_path_factory: pytest.TempPathFactory) -> int:
    """How many fsyncs the workload makes when the power stays on."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        disk, _ = run(tmp_path_factory.mktemp("counted"), monkeypatch, None)
    assert disk.calls > CUTS
    return disk.calls


@pytest.mark.parametrize("share", range(CUTS))
def test_a_power_cut_at_any_fsync_keeps_every_acknowledged_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsyncs: int, share: int
) -> None:
    disk, seen = run(tmp_path, monkeypatch, 1 + share * (fsyncs - 1) // (CUTS - 1))
    assert disk.cut
    kept = opened(disk.copy)
    kept.documents.settle_pending()
    kept.repair.check_all(kept.brains.list(), deep=True)
    assert_sound(kept, seen.acknowledged, seen.gone, seen.in_flight)
