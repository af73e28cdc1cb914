"""Make an embedded chunk database look as an earlier version wrote it: each tagged row's FTS title
without its tag words, the term postings rebuilt from those rows, and no record of the upgrade
(adapters/local/fts_tag_words.py); or its FTS5 tables made with the tokenizer before symbols
were separators (adapters/local/fts_retokenize.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from pathlib import Path
from unittest.mock import patch

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.fts_tokens import Fts5Tokens


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


OLD_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The brains' tokenizer before it was told to split at symbols (fts_separators.py)."""


def with_old_tokenizer(db: Path) -> int:
    """Make each brain's FTS5 table again with OLD_TOKENIZER, as a version before fts_separators
    wrote it, and its term postings, where it has them, from that tokenizer's tokens; how many
    rows the tables hold."""
    conn = sqlite3.connect(db, isolation_level=None)
    rows = 0
    try:
        conn.execute("BEGIN")
        for (seq,) in conn.execute("SELECT seq FROM brain_state").fetchall():
            table = schema.fts_table(seq)
            conn.execute(
                f"CREATE VIRTUAL TABLE aged USING fts5(title, text, context, tokenize='{OLD_TOKENIZER}')"
            )
            conn.execute(f"INSERT INTO aged (rowid, title, text, context) SELECT rowid, * FROM {table}")
            rows += conn.execute("SELECT count(*) FROM aged").fetchone()[0]
            conn.execute(f"DROP TABLE {table}")
            conn.execute(f"ALTER TABLE aged RENAME TO {table}")
            if fts_postings.exists(conn, table):
                with patch.object(fts_postings, "TOKENS", Fts5Tokens(OLD_TOKENIZER)):
                    fts_postings.rebuild(conn, table)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return rows
