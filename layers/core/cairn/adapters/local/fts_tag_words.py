"""The words of a chunk's tags in its FTS title column, for chunks indexed before they were.

Since tags are words of the keyword leg (chunk_schema.fts_title), a chunk's FTS title is its title,
a unit separator and the words of its tags. A database written by an earlier version holds the
title alone, so its tagged chunks would not be found by their tags until their documents were
written again. `backfill` appends the words to every such row, with its term postings, in the
opening write transaction (chunk_schema.migrate's), once per database: `index_upgrades` records
that it ran. A row that already ends with its tag words (written by this version) is left alone.
"""

from __future__ import annotations

import json
import logging
import sqlite3

from cairn import faults
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.fts_postings import PostingsWriter

SCHEMA = "CREATE TABLE IF NOT EXISTS index_upgrades (name TEXT PRIMARY KEY) WITHOUT ROWID;"
UPGRADE = "tag_words"
log = logging.getLogger(__name__)


INCREMENTAL_MAX = 2_000
"""A brain with more changed rows than this gets its term postings rebuilt once (fts_postings.rebuild)
instead of rewritten row by row: each posting holds its row's length, so appending to a row's
title rewrites the postings of every term the row holds."""


def backfill(conn: sqlite3.Connection, step: int = 5_000) -> int:
    """Append the tag words to every tagged row whose FTS title lacks them, in one pass over the
    chunks by rowid, `step` at a time; returns how many rows changed (0 once the upgrade is
    recorded)."""
    if conn.execute("SELECT 1 FROM index_upgrades WHERE name = ?", (UPGRADE,)).fetchone():
        return 0
    (tagged,) = conn.execute("SELECT count(*) FROM chunks WHERE tags != '[]'").fetchone()
    if tagged:  # a warning so that it shows without logging set up: the start waits for it
        log.warning(
            "upgrading the keyword index once: the words of %d chunks' tags (30-40 s per 100,000; "
            "others opening this data directory meanwhile wait for it)",
            tagged,
        )
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    brains = {
        brain_id: _Brain(table, fts_postings.exists(conn, table))
        for brain_id, seq in conn.execute("SELECT brain_id, seq FROM brain_state")
        if (table := schema.fts_table(int(seq))) in tables
    }
    last = -1
    while rows := conn.execute(
        "SELECT rowid, brain_id, tags FROM chunks WHERE rowid > ? AND tags != '[]' ORDER BY rowid LIMIT ?",
        (last, step),
    ).fetchall():
        last = int(rows[-1][0])
        for rowid, brain_id, tags in rows:
            if brain_id in brains and (suffix := schema.tags_suffix(json.loads(tags))):
                brains[brain_id].append(conn, int(rowid), suffix)
    changed = {brain_id: brain.finish(conn) for brain_id, brain in brains.items()}
    conn.executemany(
        "UPDATE brain_state SET generation = generation + 1 WHERE brain_id = ?",
        [(brain_id,) for brain_id, count in changed.items() if count],
    )
    conn.execute("INSERT INTO index_upgrades (name) VALUES (?)", (UPGRADE,))
    if total := sum(changed.values()):
        log.info("the keyword index now matches the tags of %d chunks indexed before it did", total)
    return total


class _Brain:
    """One brain's FTS table during the back-fill, and how its term postings follow."""

    def __init__(self, table: str, has_postings: bool) -> None:
        self.table = table
        self.postings = PostingsWriter(table) if has_postings else None
        self.rebuild = False
        self.changed = 0

    def append(self, conn: sqlite3.Connection, rowid: int, suffix: str) -> None:
        """Append `suffix` to the row's FTS title unless it ends with it already."""
        row = conn.execute(
            f"SELECT title, text, context FROM {self.table} WHERE rowid = ?", (rowid,)
        ).fetchone()
        if row is None or row[0].endswith(suffix):
            return
        title, text, context = row
        conn.execute(f"UPDATE {self.table} SET title = ? WHERE rowid = ?", (title + suffix, rowid))
        self.changed += 1
        faults.reached("index.tag_words")
        if self.postings is not None:
            self.postings.replace(rowid, (title, text, context), (title + suffix, text, context))
            if self.changed > INCREMENTAL_MAX:
                self.postings, self.rebuild = None, True

    def finish(self, conn: sqlite3.Connection) -> int:
        if self.rebuild:
            fts_postings.rebuild(conn, self.table)
        elif self.postings is not None:
            self.postings.apply(conn)
        return self.changed
