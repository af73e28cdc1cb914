"""The rebuild of FTS5 tables made with the tokenizer before symbols were separators
(fts_retokenize.py), killed with SIGKILL in the middle, then opened by two processes at once: the
killed run committed nothing (the old table whole, as it answered before), the two openers both
start and one rebuild is done, `cairn check` finds nothing wrong, and a word written against an
emoji is found by that word."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.domain.models import MemoryType
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.memory.memory_model import MemoryInput
from tests.crash.test_crash_points import KILLED, settled
from tests.support.aged_index import OLD_TOKENIZER, with_old_tokenizer
from tests.support.index_check import index_problems
from tests.support.processes import CAIRN, cli, environment

pytestmark = pytest.mark.integration


def fts_state(db: Path) -> tuple[list[str], list[tuple[int, str, str, str]], int]:
    """(the definitions of every table named for the brain's FTS5 table, its rows, its generation)."""
    conn = sqlite3.connect(db)
    try:
        seq, generation = conn.execute("SELECT seq, generation FROM brain_state").fetchone()
        table = schema.fts_table(seq)
        sql = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name LIKE ? || '%' AND sql LIKE '%fts5(%'", (table,)
        )
        rows = conn.execute(f"SELECT rowid, title, text, context FROM {table} ORDER BY rowid").fetchall()
        return [s for (s,) in sql.fetchall()], rows, generation
    finally:
        conn.close()


def test_a_rebuild_killed_mid_way_leaves_the_old_table_and_two_openers_rebuild_it_once(data: Path) -> None:
    # Given a store whose keyword index was made with the tokenizer that joined new emoji to words
    container = settled(data)
    brain = container.brains.resolve("shore")
    for i in range(4):
        container.memories.store(
            brain, MemoryInput(MemoryType.fact, f"Buoy {i} is back online, thanks🤗 crew")
        )
    db = data / "chunks.sqlite3"
    assert with_old_tokenizer(db) > 0
    definitions, rows, generation = fts_state(db)
    assert len(definitions) == 1 and f"tokenize='{OLD_TOKENIZER}'" in definitions[0]
    # When the first process to open it is killed in the middle of the rebuild
    killed = cli("brains", "list", "--data-dir", str(data), faults="index.retokenize:1")
    assert killed.returncode == KILLED, killed.stderr
    # Then nothing of it was committed: the old table, whole, and nothing beside it
    assert fts_state(db) == (definitions, rows, generation)
    # And two processes opening it at once both start; the table is rebuilt once, rows unchanged
    openers = [
        subprocess.Popen(
            [CAIRN, "brains", "list", "--data-dir", str(data)],
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for opener in openers:
        _, err = opener.communicate(timeout=300)
        assert opener.returncode == 0, err
    after_definitions, after_rows, after_generation = fts_state(db)
    assert len(after_definitions) == 1 and f"tokenize='{schema.TOKENIZER}'" in after_definitions[0]
    assert after_rows == rows and after_generation == generation + 1
    # And `cairn check` finds nothing wrong with the rebuilt index
    check = cli("check", "--deep", "--dry-run", "--data-dir", str(data))
    assert check.returncode == 0, check.stdout + check.stderr
    # And the words written against the emoji are found by the words
    opened = settled(data)
    hits = opened.adapters.chunks.search(
        ChunkQuery(text="thanks", vector=None, filter=ChunkFilter((brain.id,)), top_k=10)
    )
    assert len(hits) == 4 and all("thanks🤗" in h.chunk.text for h in hits)
    assert index_problems(opened) == []
