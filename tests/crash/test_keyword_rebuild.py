"""`cairn check` rebuilding a damaged keyword index (adapters/local/fts_health.py), killed with
SIGKILL after the new table is filled and before the commit: nothing of it is committed (the table
as damaged as before, the brain's searches still refused as damaged), and the next check rebuilds
it, after which the searches find what they found before the damage."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.domain.errors import DamagedStore
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.crash.test_crash_points import KILLED
from tests.support.index_check import index_problems
from tests.support.processes import cli
from tests.support.soundness import opened

pytestmark = pytest.mark.integration
QUERIES = ("sanderling", "note 3", "waves")


def keyword_hits(data: Path) -> list[list[tuple[str, float]]]:
    container = opened(data)
    brain = container.brains.resolve("shore")
    try:
        return [
            [(h.chunk.id, h.score) for h in container.adapters.chunks.search(
                ChunkQuery(text=text, vector=None, filter=ChunkFilter((brain.id,)), top_k=10)
            )]
            for text in QUERIES
        ]  # fmt: skip
    finally:
        container.adapters.chunks.close()  # type: ignore[attr-defined]


def test_a_rebuild_killed_before_its_commit_leaves_the_damage_for_the_next_check(data: Path) -> None:
    before = keyword_hits(data)
    assert any(before)
    db = sqlite3.connect(data / "chunks.sqlite3")
    db.execute(f"DROP TABLE {schema.fts_table(1)}_data")
    db.commit()
    db.close()

    killed = cli("check", "--data-dir", str(data), faults="index.keywords_rebuilt")

    assert killed.returncode == KILLED, killed.stdout + killed.stderr
    with pytest.raises(DamagedStore):
        keyword_hits(data)
    again = cli("check", "--data-dir", str(data))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "the keyword index of brain shore cannot be read" in again.stdout
    assert keyword_hits(data) == before
    assert index_problems(opened(data)) == []
