"""The one-time upgrade that adds tag words to a store written before them (fts_tag_words.py),
killed with SIGKILL in the middle, then done whole by the next open: nothing of the killed run was
committed, and afterwards every tagged chunk is found by its tags exactly once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.domain.models import MemoryType
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.memory.memory_model import MemoryInput
from tests.crash.test_crash_points import KILLED, settled
from tests.support.aged_index import strip_tag_words
from tests.support.index_check import index_problems
from tests.support.processes import cli

pytestmark = pytest.mark.integration


def titles(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        (seq,) = conn.execute("SELECT seq FROM brain_state").fetchone()
        return [
            title for (title,) in conn.execute(f"SELECT title FROM {schema.fts_table(seq)} ORDER BY rowid")
        ]
    finally:
        conn.close()


def upgraded(db: Path) -> bool:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'index_upgrades'").fetchone()
        return row is not None and conn.execute("SELECT count(*) FROM index_upgrades").fetchone()[0] > 0
    finally:
        conn.close()


def test_a_tag_words_upgrade_killed_mid_way_leaves_nothing_and_is_done_by_the_next_open(data: Path) -> None:
    # Given a store whose tagged memories were indexed before tags were words of the keyword leg
    container = settled(data)
    brain = container.brains.resolve("shore")
    for i in range(6):
        container.memories.store(
            brain,
            MemoryInput(
                MemoryType.fact, f"The tide gauge {i} froze overnight.", tags=("incidents", f"kw:gauge{i}")
            ),
        )
    db = data / "chunks.sqlite3"
    assert strip_tag_words(db) == 6
    before = titles(db)
    # When the first process to open it is killed in the middle of the upgrade
    killed = cli("brains", "list", "--data-dir", str(data), faults="index.tag_words:3")
    assert killed.returncode == KILLED, killed.stderr
    # Then nothing of it was committed
    assert titles(db) == before and not upgraded(db)
    # And the next open does it whole: each tagged chunk is found by its tags, once
    after = settled(data)
    assert upgraded(db)
    words = [t.split(schema.TAGS_AFTER)[1:] for t in titles(db) if schema.TAGS_AFTER in t]
    assert sorted(words) == [[f"incidents gauge{i}"] for i in range(6)]
    brain = after.brains.resolve("shore")
    hits = after.adapters.chunks.search(
        ChunkQuery(text="gauge4", vector=None, filter=ChunkFilter((brain.id,)), top_k=10)
    )
    assert [h.chunk.tags for h in hits] == [["incidents", "kw:gauge4"]]
    assert index_problems(after) == []
