"""Brains' FTS5 tables made with an earlier tokenizer, rebuilt with today's (chunk_schema.TOKENIZER).

FTS5 fixes a table's tokenizer when the table is made, and its definition in `sqlite_master` says
which one; a table whose definition is not today's `fts_ddl` is rebuilt when the index opens
(after the other migrations): its rows are copied into a new table under a temporary name, the
old one is dropped, the new one takes its name, its term postings are made again from the new
tokens (fts_postings.py, when it had them) and the brain's generation moves on.

Each brain is rebuilt in a write transaction of its own, which checks again that the table is
still old: a process killed in the middle commits nothing of that brain (the old table is whole
and answers as before, and the next open rebuilds it), brains done before it stay done, and a
second process opening the same file waits for the writer lock and then finds the table current
(as long as the rebuild progresses: upgrade_wait.py). Other
processes already serving the file keep reading the old table until the commit. A brain whose
table is damaged (SQLite cannot read it) is left as it was and the others are rebuilt: its
searches are refused as damaged, as before, and the next open tries it again.
"""

from __future__ import annotations

import logging
import sqlite3
import time

from cairn import faults
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.domain.errors import DamagedStore

log = logging.getLogger(__name__)


def outdated(conn: sqlite3.Connection) -> list[int]:
    """The seqs of the brains whose FTS5 table was made with another tokenizer. The schema is read
    once: `sqlite_master` has no index, so a read of it a brain made each opening cost the square
    of the brains (1.6 s at 1,000)."""
    made = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    seqs = [int(seq) for (seq,) in conn.execute("SELECT seq FROM brain_state ORDER BY seq").fetchall()]
    return [seq for seq in seqs if _made_otherwise(made.get(schema.fts_table(seq)))]


def _is_outdated(conn: sqlite3.Connection, seq: int) -> bool:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (schema.fts_table(seq),)).fetchone()
    return _made_otherwise(None if row is None else row[0])


def _made_otherwise(sql: str | None) -> bool:
    return sql is not None and f"tokenize='{schema.TOKENIZER}'" not in sql


def retokenize(conn: sqlite3.Connection, seq: int) -> int:
    """Rebuild one brain's FTS5 table with today's tokenizer, in the caller's write transaction;
    how many rows it holds (0 when it was current already, nothing done)."""
    if not _is_outdated(conn, seq):
        return 0
    table = schema.fts_table(seq)
    fresh = f"{table}_retokenized"
    had_postings = fts_postings.exists(conn, table)
    conn.execute(schema.fts_ddl(seq, fresh))
    conn.execute(
        f"INSERT INTO {fresh} (rowid, title, text, context) SELECT rowid, title, text, context FROM {table}"
    )
    (rows,) = conn.execute(f"SELECT count(*) FROM {fresh}").fetchone()
    faults.reached("index.retokenize")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {fresh} RENAME TO {table}")
    if had_postings:
        fts_postings.rebuild(conn, table)
    conn.execute("UPDATE brain_state SET generation = generation + 1 WHERE seq = ?", (seq,))
    return int(rows)


def upgrade(db: ThreadConnections) -> int:
    """Rebuild every outdated table, a brain per transaction; how many rows were rebuilt."""
    seqs = outdated(db.get())
    if not seqs:
        return 0
    (chunks,) = db.get().execute("SELECT count(*) FROM chunks").fetchone()
    # A warning, so that it shows without logging set up: the start waits for it.
    log.warning(
        "rebuilding the keyword index of %d brain(s) once, for a tokenizer that splits words from "
        "emoji and symbols (%d chunks; about 30 s per 100,000; others opening this data directory "
        "meanwhile wait for it)",
        len(seqs),
        chunks,
    )
    started, total = time.monotonic(), 0
    for seq in seqs:
        try:
            with db.transaction() as conn:
                total += retokenize(conn, seq)
        except DamagedStore as exc:
            # One brain's damaged table must not keep every command (`cairn check` included) from
            # opening the data directory: it stays as it was, its searches refused as damaged.
            log.warning("the keyword table %s is damaged and was not rebuilt: %s", schema.fts_table(seq), exc)
    log.warning("keyword index rebuilt: %d chunks in %.1f s", total, time.monotonic() - started)
    return total
