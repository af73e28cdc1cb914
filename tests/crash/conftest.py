"""The crash suites' shared data directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.processes import batch, cli, serving
from tests.support.soundness import note


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a brain `shore` holding ten notes, written by a process that exited:
    made once per module (two processes and an embedding model to start), copied for each test."""
    data = tmp_path_factory.mktemp("seeded") / "data"
    assert cli("brains", "create", "Shore", "--data-dir", str(data)).returncode == 0
    with serving(data) as server:
        assert batch(server.base, "shore", {f"notes/{n}.md": note(n) for n in range(10)}).status_code == 200
    return data


@pytest.fixture
def data(seeded: Path, tmp_path: Path) -> Path:
    """A copy of the seeded data directory of this test's own."""
    copy = tmp_path / "data"
    shutil.copytree(seeded, copy)
    return copy
