"""The embedded chunk index opens a data directory written before chunks had memory fields.

The database is built here with the schema of that version (no current / facets / importance /
validity milliseconds, no chunk_facets table, the narrower rows index), its chunks written as
that version wrote them; opening it migrates in place, and old and new chunks are then filtered
alike. Also: which filters the index may serve without joining the chunks table.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cairn.adapters.local.chunk_schema import is_plain
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_store import VectorStore
from cairn.ports.chunks import ChunkFilter
from tests.contract.test_chunk_index_contract import DIM, axis, chunk, search

T0 = datetime(2025, 3, 1, tzinfo=UTC)
PLUS2 = timezone(timedelta(hours=2))

OLD_SCHEMA = """
CREATE TABLE chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    brain_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    path TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    tags TEXT NOT NULL,
    type TEXT,
    scope TEXT,
    sector TEXT,
    valid_from TEXT,
    valid_to TEXT,
    active INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    vec_row INTEGER NOT NULL,
    fingerprint TEXT NOT NULL DEFAULT ''
);
CREATE INDEX chunks_brain_path ON chunks (brain_id, path, vec_row);
CREATE INDEX chunks_brain_document ON chunks (brain_id, document_id, ordinal, vec_row);
CREATE INDEX chunks_brain_created ON chunks (brain_id, created_ms);
CREATE INDEX chunks_brain_rows ON chunks (brain_id, active, vec_row, created_ms);
CREATE TABLE chunk_tags (
    tag TEXT NOT NULL,
    chunk_rowid INTEGER NOT NULL,
    brain_id TEXT NOT NULL,
    vec_row INTEGER NOT NULL,
    PRIMARY KEY (tag, chunk_rowid)
) WITHOUT ROWID;
CREATE INDEX chunk_tags_rowid ON chunk_tags (chunk_rowid);
CREATE INDEX chunk_tags_brain ON chunk_tags (tag, brain_id, vec_row);
CREATE TABLE brain_state (
    seq INTEGER PRIMARY KEY,
    brain_id TEXT NOT NULL UNIQUE,
    generation INTEGER NOT NULL
);
INSERT INTO brain_state (seq, brain_id, generation) VALUES (1, 'b1', 1);
CREATE VIRTUAL TABLE chunks_fts_1 USING fts5(
    title, text, context, tokenize='porter unicode61 remove_diacritics 2'
);
"""

# (id, text, valid_from, valid_to) as the earlier version stored them: ISO text with its offset
OLD_CHUNKS: list[tuple[str, str, str | None, str | None]] = [
    ("open", "walrus on the ice", None, None),
    # ended an hour before T0, written at +02:00: as text it sorts after T0
    ("ended", "walrus in the water", None, (T0 - timedelta(hours=1)).astimezone(PLUS2).isoformat()),
    # starts at T0 exactly, written at +02:00
    ("starts", "walrus on the rocks", T0.astimezone(PLUS2).isoformat(), None),
]


def write_old_index(db: Path, vectors: Path) -> None:
    rows = VectorStore(vectors, DIM).file("b1").append(np.stack([axis(i) for i in range(len(OLD_CHUNKS))]))
    conn = sqlite3.connect(db)
    conn.executescript(OLD_SCHEMA)
    for (cid, text, valid_from, valid_to), vec_row in zip(OLD_CHUNKS, rows.tolist(), strict=True):
        values: tuple[Any, ...] = (
            cid, "b1", f"doc-{cid}", f"notes/{cid}.md", 0, 0, len(text), json.dumps(["old"]), "fact", None,
            None, valid_from, valid_to, 1, T0.isoformat(), int(T0.timestamp() * 1000), vec_row, "e:r",
        )  # fmt: skip
        (rowid,) = conn.execute(
            f"INSERT INTO chunks VALUES (NULL, {', '.join('?' * len(values))}) RETURNING rowid", values
        ).fetchone()
        conn.execute(
            "INSERT INTO chunks_fts_1 (rowid, title, text, context) VALUES (?, '', ?, '')", (rowid, text)
        )
        conn.execute("INSERT INTO chunk_tags VALUES ('old', ?, 'b1', ?)", (rowid, vec_row))
    conn.commit()
    conn.close()


@pytest.fixture
def paths(tmp_path: Path) -> tuple[Path, Path]:
    db, vectors = tmp_path / "chunks.db", tmp_path / "vectors"
    write_old_index(db, vectors)
    return db, vectors


def both_legs(index: SqliteChunkIndex, **options: object) -> list[str]:
    by_text = sorted(search(index, "walrus", None, top_k=20, **options))
    by_vector = sorted(search(index, "", axis(0), top_k=20, **options))
    assert by_text == by_vector, options
    return by_text


def test_an_index_written_before_memory_fields_opens_and_searches(paths: tuple[Path, Path]) -> None:
    # When the old index is opened
    index = SqliteChunkIndex(*paths, DIM)
    try:
        # Then its chunks read as current, without facets or importance, and are found as before
        old = index.get_chunks("b1", "doc-open")[0]
        assert (old.current, old.facets, old.importance, old.tags, old.fingerprint) == (
            True,
            {},
            None,
            ["old"],
            "e:r",
        )
        assert index.count("b1") == 3
        assert both_legs(index) == ["ended", "open", "starts"]
        assert both_legs(index, tags=("old",)) == ["ended", "open", "starts"]
        assert both_legs(index, current_only=True) == ["ended", "open", "starts"]
        assert both_legs(index, importance_min=0.0) == []
        # Their tag is a word of the keyword leg, as a new chunk's is (fts_tag_words.py)
        assert sorted(search(index, "old", None, top_k=20)) == ["ended", "open", "starts"]
        assert old.title == ""
        assert both_legs(index, facets=(("type", ("fact",)),)) == []  # no facets until rewritten
        # Their validity, kept as text with offsets, is compared by its moment
        assert both_legs(index, valid_at=T0) == ["open", "starts"]
        assert both_legs(index, valid_at=T0 - timedelta(hours=2)) == ["ended", "open"]
        # And new chunks with memory fields live beside them
        index.upsert(
            [
                chunk("new", "walrus again", facets={"type": "fact"}, importance=0.8),
                chunk("gone", "walrus gone", current=False, valid_to=T0),
            ],
            np.stack([axis(5), axis(6)]),
        )
        assert both_legs(index, current_only=True) == ["ended", "new", "open", "starts"]
        assert both_legs(index, facets=(("type", ("fact",)),), importance_min=0.5) == ["new"]
        assert both_legs(index, valid_at=T0) == ["new", "open", "starts"]
    finally:
        index.close()


def test_the_migration_runs_once_and_leaves_the_new_schema(paths: tuple[Path, Path]) -> None:
    SqliteChunkIndex(*paths, DIM).close()
    reopened = SqliteChunkIndex(*paths, DIM)  # a second open: nothing left to migrate
    try:
        assert both_legs(reopened, valid_at=T0) == ["open", "starts"]
    finally:
        reopened.close()
    conn = sqlite3.connect(paths[0])
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
        assert {"is_current", "facets", "importance", "valid_from_ms", "valid_to_ms"} <= columns
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(chunks)")}
        assert "chunks_brain_rows_v2" in indexes and "chunks_brain_rows" not in indexes
        facet_indexes = {row[1] for row in conn.execute("PRAGMA index_list(chunk_facets)")}
        assert "chunk_facets_brain" in facet_indexes and "chunk_facets_value" not in facet_indexes
        ms = dict(conn.execute("SELECT id, coalesce(valid_from_ms, valid_to_ms) FROM chunks").fetchall())
        hour = 3_600_000
        assert ms == {
            "open": None,
            "ended": int(T0.timestamp() * 1000) - hour,
            "starts": int(T0.timestamp() * 1000),
        }
    finally:
        conn.close()


MEMORY_FILTERS: list[dict[str, Any]] = [
    {"current_only": True},
    {"facets": (("type", ("fact",)),)},
    {"importance_min": 0.0},
    {"valid_at": T0},
    {"any_tags": (("red", "blue"),)},  # not a memory field, but never plain either
    {"owners": (("b1", "alice"),)},  # the access rule's: never plain either
]


@pytest.mark.parametrize("options", MEMORY_FILTERS, ids=lambda o: next(iter(o)))
def test_a_memory_filter_is_never_plain(options: dict[str, Any]) -> None:
    # "plain" filters are served from the cached rows without looking at the chunks table
    assert is_plain(ChunkFilter(("b1",)))
    assert not is_plain(ChunkFilter(("b1",), **options))


def test_every_filter_field_is_known_to_is_plain() -> None:
    # a field added to ChunkFilter must be taught to is_plain (and to the adapters)
    known = {
        "brain_ids",
        "active_only",
        "path_prefixes",
        "tags",
        "created_from",
        "created_to",
        "document_ids",
    }
    known |= {next(iter(o)) for o in MEMORY_FILTERS}
    assert {f.name for f in fields(ChunkFilter)} == known
