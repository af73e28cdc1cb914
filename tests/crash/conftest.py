"""The crash suites' shared data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import batch, cli, serving
from tests.support.soundness import note


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    """A data directory with a brain `shore` holding ten notes, written by a process that exited."""
    data = tmp_path / "data"
    assert cli("brains", "create", "Shore", "--data-dir", str(data)).returncode == 0
    with serving(data) as server:
        assert batch(server.base, "shore", {f"notes/{n}.md": note(n) for n in range(10)}).status_code == 200
    yield data
