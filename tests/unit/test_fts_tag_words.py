"""Opening a database whose chunks were indexed before tags were words of the keyword leg appends
their tag words to the FTS titles, with their term postings, once and all at once.

The old database is made here from a new one: the tag words are taken off some rows' FTS titles
(as the earlier version wrote them), the term postings rebuilt from those rows and the upgrade's
record dropped. The other rows keep their words, as a version that matched tags but did not yet
back-fill them wrote them. The small-table shortcut is off, so the term postings answer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings, fts_search, fts_tag_words
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from tests.contract.test_chunk_index_contract import DIM, axis, chunk, search
from tests.support.aged_index import strip_tag_words

CHUNKS = [
    chunk("spill", "Acid on the bench floor.", title="Bench 3", tags=["incidents", "kw:acid"]),
    chunk("fire", "The hood caught fire.", title="Hood", tags=["incidents"]),
    chunk("plain", "The widefield is free on Fridays.", title="Widefield"),
    chunk("keep", "Freezer racks hold cell lines.", title="Freezer", tags=["storage"]),
    chunk("other", "A spill in the cold room.", title="Cold room", brain_id="b2", tags=["kw:incidents"]),
    chunk("quiet", "Nothing happened.", title="Log", brain_id="b3"),
]
AGED = {"spill", "fire", "other"}  # written by the earlier version: the title alone


@pytest.fixture(autouse=True)
def postings_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 0)


def fts_rows(db: Path) -> dict[str, tuple[str, str]]:
    """chunk id -> (brain, FTS title)."""
    conn = sqlite3.connect(db)
    try:
        found = {}
        for brain_id, seq in conn.execute("SELECT brain_id, seq FROM brain_state").fetchall():
            table = schema.fts_table(seq)
            for cid, title in conn.execute(
                f"SELECT c.id, f.title FROM chunks c JOIN {table} f ON f.rowid = c.rowid"
            ).fetchall():
                found[cid] = (brain_id, title)
        return found
    finally:
        conn.close()


def postings(db: Path) -> dict[str, list[tuple[str, int, int, bytes]]]:
    conn = sqlite3.connect(db)
    try:
        tables = [schema.fts_table(seq) for (seq,) in conn.execute("SELECT seq FROM brain_state")]
        return {
            table: conn.execute(
                f"SELECT term, start, n, data FROM {fts_postings.names(table)[0]} ORDER BY term, start"
            ).fetchall()
            for table in tables
        }
    finally:
        conn.close()


def generations(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT brain_id, generation FROM brain_state").fetchall())
    finally:
        conn.close()


@pytest.fixture
def paths(tmp_path: Path) -> tuple[Path, Path]:
    db, vectors = tmp_path / "chunks.db", tmp_path / "vectors"
    index = SqliteChunkIndex(db, vectors, DIM)
    index.upsert(CHUNKS, np.stack([axis(i) for i in range(len(CHUNKS))]))
    index.close()
    strip_tag_words(db, only=AGED)
    return db, vectors


@pytest.mark.parametrize("incremental_max", [2_000, 1], ids=["row by row", "b1 rebuilt"])
def test_opening_appends_the_tag_words_once_with_exact_postings(
    paths: tuple[Path, Path], incremental_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_tag_words, "INCREMENTAL_MAX", incremental_max)
    db, vectors = paths
    assert search_tag(paths, "incidents", "b1") == []  # aged: found by the words of its text only
    before = generations(db)
    # When the old database is opened
    index = SqliteChunkIndex(db, vectors, DIM)
    try:
        # Then each tagged row's FTS title is its title and tag words, exactly once
        rows = fts_rows(db)
        for c in CHUNKS:
            assert rows[c.id] == (c.brain_id, schema.fts_title(c)), c.id
        # and the postings are what a rebuild from those rows makes, bit for bit
        upgraded = postings(db)
        conn = sqlite3.connect(db)
        for table in upgraded:
            fts_postings.rebuild(conn, table)
        conn.commit()
        conn.close()
        assert postings(db) == upgraded
        # And the keyword leg finds the aged chunks by their tags, in every brain
        assert set(search(index, "which incidents?", brain_ids=("b1",))) == {"spill", "fire"}
        assert search(index, "incidents", brain_ids=("b2",)) == ["other"]
        assert search(index, "acid") == ["spill"]
        assert search(index, "kw") == []
        # while reads give each chunk back as it was written
        by_id = {c.id: c for c in CHUNKS if c.brain_id == "b1"}
        assert index.get_many("b1", list(by_id)) == by_id
        # And only the brains whose rows changed moved on a generation
        after = generations(db)
        assert {b for b in after if after[b] != before[b]} == {"b1", "b2"}
    finally:
        index.close()
    # Once recorded, the upgrade does not run again
    assert fts_tag_words.UPGRADE in upgrades(db)
    SqliteChunkIndex(db, vectors, DIM).close()
    assert generations(db) == after


def test_a_back_fill_that_fails_changes_nothing_and_runs_again(
    paths: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, vectors = paths
    rows, before = fts_rows(db), postings(db)
    finish = fts_tag_words._Brain.finish
    calls = []

    def fail_second(brain: fts_tag_words._Brain, conn: sqlite3.Connection) -> int:
        calls.append(brain.table)
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return finish(brain, conn)

    monkeypatch.setattr(fts_tag_words._Brain, "finish", fail_second)
    with pytest.raises(sqlite3.OperationalError):
        SqliteChunkIndex(db, vectors, DIM)
    # Rows and postings were changed in the same transaction, and rolled back with it
    assert fts_rows(db) == rows and postings(db) == before
    assert fts_tag_words.UPGRADE not in upgrades(db)
    monkeypatch.setattr(fts_tag_words._Brain, "finish", finish)
    index = SqliteChunkIndex(db, vectors, DIM)
    try:
        assert search(index, "incidents", brain_ids=("b2",)) == ["other"]
    finally:
        index.close()


def upgrades(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM index_upgrades")}
    finally:
        conn.close()


def search_tag(paths: tuple[Path, Path], word: str, brain_id: str) -> list[str]:
    """The chunks of `brain_id` whose FTS title holds `word`, read without opening the index."""
    conn = sqlite3.connect(paths[0])
    try:
        (seq,) = conn.execute("SELECT seq FROM brain_state WHERE brain_id = ?", (brain_id,)).fetchone()
        table = schema.fts_table(seq)
        return [
            cid
            for (cid,) in conn.execute(
                f"SELECT c.id FROM {table} f JOIN chunks c ON c.rowid = f.rowid WHERE {table} MATCH ?",
                (f"title:{word}",),
            )
        ]
    finally:
        conn.close()
