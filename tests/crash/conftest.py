"""The crash suites' shared data directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cairn.bootstrap.closing import close_stores
from cairn.services.documents.inputs import BatchOp
from tests.support.soundness import note, opened


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a brain `shore` holding ten notes, written in this process and its
    stores closed (the set-up no test checks; a server for it took two process starts): made once
    per module, copied for each test."""
    data = tmp_path_factory.mktemp("seeded") / "data"
    data.mkdir()
    container = opened(data)
    brain = container.brains.create("Shore")
    container.documents.batch(brain, [BatchOp("write", f"notes/{n}.md", note(n).encode()) for n in range(10)])
    close_stores(container)
    return data


@pytest.fixture
def data(seeded: Path, tmp_path: Path) -> Path:
    """A copy of the seeded data directory of this test's own."""
    copy = tmp_path / "data"
    shutil.copytree(seeded, copy)
    return copy
