"""A container wired onto the in-memory fakes of every port, through the real composition root."""

from __future__ import annotations

from pathlib import Path

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.bootstrap import Adapters, Container, build_container
from cairn.config import Settings
from cairn.ports.clock import Clock
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.clock import FakeClock
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.jobs import MemoryJobRunner
from tests.fakes.records import MemoryRecordStore


def fake_adapters(dimension: int = 64, clock: Clock | None = None) -> Adapters:
    """Fakes of every port; the extractive generator is real (offline and deterministic)."""
    clock = clock or FakeClock()
    return Adapters(
        records=MemoryRecordStore(),
        blobs=MemoryBlobStore(),
        chunks=MemoryChunkIndex(dimension),
        embedder=HashingEmbedder(dimension),
        clock=clock,
        generator=ExtractiveGenerator(),
        jobs=MemoryJobRunner(clock),
    )


def fake_container(tmp_path: Path | None = None, **overrides: object) -> Container:
    settings = Settings(data_dir=(tmp_path or Path("/nonexistent-cairn")) / "data", **overrides)  # type: ignore[arg-type]
    return build_container(settings, fake_adapters())
