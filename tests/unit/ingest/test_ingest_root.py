"""The local backend creates the ingest root when it starts, so HTTP file ingest has a place to read."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import local as bootstrap
from cairn.config import Settings
from tests.fakes.embedder import HashingEmbedder


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "local_embedder", lambda settings: HashingEmbedder(8))


def test_the_default_ingest_root_is_created_in_the_data_dir(tmp_path: Path) -> None:
    bootstrap.local_adapters(Settings(data_dir=tmp_path / "data"))
    assert (tmp_path / "data" / "ingest").is_dir()


def test_a_configured_ingest_root_is_created(tmp_path: Path) -> None:
    bootstrap.local_adapters(Settings(data_dir=tmp_path / "data", ingest_root=tmp_path / "drop" / "here"))
    assert (tmp_path / "drop" / "here").is_dir()
    assert not (tmp_path / "data" / "ingest").exists()
