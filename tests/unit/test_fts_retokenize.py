"""Opening an embedded index whose FTS5 tables were made with the tokenizer before symbols were
separators rebuilds them with today's (adapters/local/fts_retokenize.py): the same rows, found by
the words beside their symbols, term postings as a fresh build makes them; a brain per
transaction, so a rebuild that dies leaves each brain old and whole or new and whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from cairn import faults
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.errors import DamagedStore
from cairn.faults import InjectedFault
from tests.contract.test_chunk_index_contract import DIM, axis, chunk, search
from tests.support.aged_index import OLD_TOKENIZER, with_old_tokenizer

BRAINS = ("b1", "b2", "b3")


def definitions(db: Path) -> dict[str, str]:
    """Each FTS5 table's (and any other table's beside it) tokenizer as its definition says."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE name LIKE 'chunks_fts_%' AND sql LIKE '%fts5(%'"
        )
        return {name: sql.split("tokenize='")[1].rsplit("'", 1)[0] for name, sql in rows.fetchall()}
    finally:
        conn.close()


def generations(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT brain_id, generation FROM brain_state").fetchall())
    finally:
        conn.close()


@pytest.fixture
def aged(tmp_path: Path) -> Path:
    """An index of three brains, each with a note whose word touches a new emoji, as an earlier
    version's tokenizer made its tables; b2 has term postings."""
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
    for n, brain in enumerate(BRAINS):
        notes = [chunk(f"{brain}-hug", "thanks🤗 for the review", brain_id=brain),
                 chunk(f"{brain}-plain", "the harbour crane is idle", brain_id=brain)]  # fmt: skip
        index.upsert(notes, np.stack([axis(2 * n), axis(2 * n + 1)]))
    with index._db.transaction() as conn:  # postings as a brain past fts_search.SMALL_TABLE has them
        fts_postings.ensure(conn, schema.fts_table(2))
    index.close()
    assert with_old_tokenizer(tmp_path / "chunks.db") == 6
    return tmp_path


def _search(index: SqliteChunkIndex, brain: str, words: str) -> list[str]:
    return search(index, words, brain_ids=(brain,))


def test_opening_rebuilds_each_old_table_with_todays_tokenizer(aged: Path) -> None:
    db = aged / "chunks.db"
    assert set(definitions(db).values()) == {OLD_TOKENIZER}
    before = generations(db)
    index = SqliteChunkIndex(db, aged / "vectors", DIM)
    try:
        assert set(definitions(db).values()) == {schema.TOKENIZER} and len(definitions(db)) == 3
        for brain in BRAINS:
            assert sorted(_search(index, brain, "thanks")) == [f"{brain}-hug"]
            assert sorted(_search(index, brain, "crane")) == [f"{brain}-plain"]
            hug = index.get_chunk(brain, f"{brain}-hug")
            assert hug is not None and hug.text == "thanks🤗 for the review"
        assert all(generations(db)[b] > before[b] for b in BRAINS)  # cached rows are read afresh
    finally:
        index.close()


def test_the_term_postings_are_made_again_from_the_new_tokens(aged: Path) -> None:
    db = aged / "chunks.db"
    table = schema.fts_table(2)

    def postings() -> list[tuple[str, int, int, bytes]]:
        conn = sqlite3.connect(db)
        try:
            return conn.execute(
                f"SELECT term, start, n, data FROM {table}_postings ORDER BY term, start"
            ).fetchall()
        finally:
            conn.close()

    old = postings()
    assert "thanks🤗" in {term for term, *_ in old}  # the earlier tokenizer's token
    SqliteChunkIndex(db, aged / "vectors", DIM).close()
    migrated = postings()
    conn = sqlite3.connect(db)
    fts_postings.rebuild(conn, table)  # what a fresh build of today's table makes
    conn.commit()
    conn.close()
    assert migrated == postings() != old
    assert "thank" in {term for term, *_ in migrated} and "thanks🤗" not in {term for term, *_ in migrated}


def test_a_rebuild_that_dies_leaves_each_brain_whole_and_the_next_open_finishes(aged: Path) -> None:
    db = aged / "chunks.db"
    with faults.armed("index.retokenize", at=2), pytest.raises(InjectedFault):
        SqliteChunkIndex(db, aged / "vectors", DIM)
    # The first brain was committed new, the second rolled back old and whole, the third untouched
    tables = definitions(db)
    assert [tables[schema.fts_table(seq)] for seq in (1, 2, 3)] == [
        schema.TOKENIZER,
        OLD_TOKENIZER,
        OLD_TOKENIZER,
    ]
    assert len(tables) == 3  # nothing under the temporary name
    index = SqliteChunkIndex(db, aged / "vectors", DIM)
    try:
        assert set(definitions(db).values()) == {schema.TOKENIZER}
        assert [sorted(_search(index, brain, "thanks")) for brain in BRAINS] == [[f"{b}-hug"] for b in BRAINS]
    finally:
        index.close()


def test_a_second_opener_finds_the_tables_rebuilt_and_rebuilds_nothing(aged: Path) -> None:
    db = aged / "chunks.db"
    first = SqliteChunkIndex(db, aged / "vectors", DIM)
    rebuilt = generations(db)
    second = SqliteChunkIndex(db, aged / "vectors", DIM)
    try:
        assert generations(db) == rebuilt
        assert sorted(_search(second, "b1", "thanks")) == ["b1-hug"]
    finally:
        first.close()
        second.close()


def test_a_brain_whose_old_table_is_damaged_keeps_no_other_from_opening(aged: Path) -> None:
    db = aged / "chunks.db"
    conn = sqlite3.connect(db)
    conn.execute(f"DROP TABLE {schema.fts_table(1)}_data")  # b1's table can no longer be read
    conn.commit()
    conn.close()
    index = SqliteChunkIndex(db, aged / "vectors", DIM)
    try:
        tables = definitions(db)
        assert [tables[schema.fts_table(seq)] for seq in (1, 2, 3)] == [
            OLD_TOKENIZER,
            schema.TOKENIZER,
            schema.TOKENIZER,
        ]
        assert [sorted(_search(index, brain, "thanks")) for brain in ("b2", "b3")] == [["b2-hug"], ["b3-hug"]]
        with pytest.raises(DamagedStore):
            _search(index, "b1", "crane")
    finally:
        index.close()
