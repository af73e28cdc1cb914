"""A container wired onto the in-memory fakes of every port, through the real composition root."""

from __future__ import annotations

from pathlib import Path

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.bootstrap import Adapters, Container, build_container
from cairn.bootstrap.models import reranker_for
from cairn.bootstrap.sign_in import oauth_clients_for
from cairn.config import Settings
from cairn.ports.clock import Clock
from cairn.ports.facts import FactExtractor
from cairn.ports.reflection import Reflector
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.clock import FakeClock
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.jobs import MemoryJobRunner
from tests.fakes.records import MemoryRecordStore
from tests.fakes.store_secret import FakeStoreSecret


def fake_adapters(
    dimension: int = 64,
    clock: Clock | None = None,
    extractor: FactExtractor | None = None,
    reflector: Reflector | None = None,
) -> Adapters:
    """Fakes of every port; the extractive generator and the rule-based fact extractor and
    reflector are the real offline adapters (deterministic, no model)."""
    clock = clock or FakeClock()
    if extractor is None:
        from cairn.adapters.local.rule_facts import RuleFactExtractor

        extractor = RuleFactExtractor()
    if reflector is None:
        from cairn.adapters.local.rule_reflect import RuleReflector

        reflector = RuleReflector()
    return Adapters(
        records=MemoryRecordStore(),
        blobs=MemoryBlobStore(),
        chunks=MemoryChunkIndex(dimension),
        embedder=HashingEmbedder(dimension),
        clock=clock,
        generator=ExtractiveGenerator(),
        jobs=MemoryJobRunner(clock),
        extractor=extractor,
        reflector=reflector,
        store_secret=FakeStoreSecret(),
    )


def fake_container(tmp_path: Path | None = None, **overrides: object) -> Container:
    """Fake storage; a re-ranker when the settings configure one (a test's loopback server), and a
    user pool's app clients when they name one (moto's, tests/support/cognito_pool.py)."""
    settings = Settings(data_dir=(tmp_path or Path("/nonexistent-cairn")) / "data", **overrides)  # type: ignore[arg-type]
    adapters = fake_adapters()
    adapters.reranker = reranker_for(settings)
    adapters.oauth_clients = oauth_clients_for(settings)
    return build_container(settings, adapters)
