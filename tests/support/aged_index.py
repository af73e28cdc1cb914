"""Make an embedded chunk database look as a version before tag words wrote it: each tagged row's
FTS title without its tag words, the term postings rebuilt from those rows, and no record of the
upgrade (adapters/local/fts_tag_words.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from pathlib import Path

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings


def strip_tag_words(db: Path, only: Collection[str] | None = None) -> int:
    """Take the tag words off the FTS titles of the tagged chunks (of those with ids in `only`, if
    given); returns how many rows changed."""
    conn = sqlite3.connect(db)
    changed = 0
    try:
        for brain_id, seq in conn.execute("SELECT brain_id, seq FROM brain_state").fetchall():
            table = schema.fts_table(seq)
            rows = conn.execute(
                f"SELECT c.rowid, c.id, c.tags, f.title FROM chunks c JOIN {table} f ON f.rowid = c.rowid "
                "WHERE c.brain_id = ?",
                (brain_id,),
            ).fetchall()
            for rowid, cid, tags, title in rows:
                suffix = schema.tags_suffix(json.loads(tags))
                if (only is None or cid in only) and suffix and title.endswith(suffix):
                    conn.execute(
                        f"UPDATE {table} SET title = ? WHERE rowid = ?", (title.removesuffix(suffix), rowid)
                    )
                    changed += 1
            if fts_postings.exists(conn, table):
                fts_postings.rebuild(conn, table)
        conn.execute("DROP TABLE IF EXISTS index_upgrades")
        conn.commit()
    finally:
        conn.close()
    return changed
