"""Dropping a brain from the embedded ChunkIndex's database, and scrubbing from it what deleted
chunks left behind.

A delete does not wipe everything at once. FTS5 keeps a deleted row's terms in its segments, only
marked deleted, until the segments are merged. Connections use secure_delete FAST
(sqlite_threads.py), so a delete zeroes its cells, but a page freed whole (a long text's overflow
pages, a merged segment, a dropped table) keeps its bytes on the free list. The WAL also still
holds pages as they were before. A scrub merges the brain's FTS5 segments into one ('optimize'
drops deleted rows' entries), rebuilds its term postings from the live rows, and overwrites every
free page of the database with zeros, all in one transaction that zeroes the pages it frees.
The caller then truncates the WAL (SqliteChunkIndex.scrub). Vectors are scrubbed by compaction
(vector_compaction.py). Not reached: a deleted key (a chunk id, path or term) that an index
b-tree still holds as a divider in an interior page; only a VACUUM rewrites those.
"""

from __future__ import annotations

import sqlite3

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings

_FILL = "chunk_scrub_fill"
_FILL_BYTES = 1 << 24  # zeros per row of the fill: well under SQLite's largest blob


def drop_rows(conn: sqlite3.Connection, brain_id: str, last_epoch: int) -> int:
    """Delete the brain's chunks, tags, facets, FTS5 table, term postings and state row in the
    caller's write transaction, and raise the floor a brain created afterwards starts from past
    its generation and past `last_epoch` (the latest epoch any of its files has, -1 if none);
    returns how many chunks it had."""
    owned = "chunk_rowid IN (SELECT rowid FROM chunks WHERE brain_id = ?)"
    conn.execute(f"DELETE FROM chunk_tags WHERE {owned}", (brain_id,))
    conn.execute(f"DELETE FROM chunk_facets WHERE {owned}", (brain_id,))
    removed = conn.execute("DELETE FROM chunks WHERE brain_id = ?", (brain_id,)).rowcount
    state = schema.brain_state(conn, brain_id)
    generation = -1
    if state is not None:
        table = schema.fts_table(state[0])
        fts_postings.drop(conn, table)
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        last_epoch = max(last_epoch, schema.vector_epoch(conn, brain_id))
        generation = state[1]
        conn.execute("DELETE FROM brain_state WHERE brain_id = ?", (brain_id,))
    conn.execute(
        "INSERT INTO brain_floor (id, generation, vec_epoch) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET "
        "generation = max(generation, excluded.generation), vec_epoch = max(vec_epoch, excluded.vec_epoch)",
        (generation + 1, last_epoch + 1),
    )
    return int(removed)


def purge_text(conn: sqlite3.Connection, brain_id: str) -> None:
    """Merge the brain's FTS5 segments into one, which leaves out deleted rows' entries, and
    rebuild its term postings (if it has them) from the live rows."""
    state = schema.brain_state(conn, brain_id)
    if state is None:
        return
    table = schema.fts_table(state[0])
    conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    if fts_postings.exists(conn, table):
        fts_postings.rebuild(conn, table)


def wipe_free_pages(conn: sqlite3.Connection) -> None:
    """Overwrite every free page of the database with zeros, in the caller's write transaction
    (secure_delete ON). A table of zero-filled blobs larger than the free list takes every free
    page, since SQLite reuses free pages before growing the file, and dropping it frees them
    again as zeros. The file grows by a page or two, which then stay free."""
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    if not free:
        return
    remaining = free * int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.execute(f"CREATE TABLE {_FILL} (zeros BLOB NOT NULL)")
    while remaining > 0:
        size = min(remaining, _FILL_BYTES)
        conn.execute(f"INSERT INTO {_FILL} (zeros) VALUES (zeroblob(?))", (size,))
        remaining -= size
    conn.execute(f"DROP TABLE {_FILL}")
