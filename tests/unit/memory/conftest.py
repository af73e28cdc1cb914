from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.facts import FakeFactExtractor, FakeReflector


@pytest.fixture
def extractor() -> FakeFactExtractor:
    return FakeFactExtractor()


@pytest.fixture
def reflector() -> FakeReflector:
    return FakeReflector()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def container(
    tmp_path: Path, extractor: FakeFactExtractor, reflector: FakeReflector, clock: FakeClock
) -> Container:
    adapters = fake_adapters(clock=clock, extractor=extractor, reflector=reflector)
    return build_container(Settings(data_dir=tmp_path / "data"), adapters)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Memory", slug="memory")
