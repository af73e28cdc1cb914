from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from tests.fakes.container import fake_container


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Sessions", slug="sessions")
