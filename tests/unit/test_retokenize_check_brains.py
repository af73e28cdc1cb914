"""Opening the embedded chunk index asks which brains' FTS5 tables were made with an earlier
tokenizer (fts_retokenize.py). It reads the schema once, not once a brain: with ten times the
brains it does about ten times the work, not a hundred. Counted as SQLite virtual-machine steps."""

from __future__ import annotations

import sqlite3

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_retokenize
from tests.support.sqlite_steps import steps


def _brains(count: int, old: set[int]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema.SCHEMA)
    for n in range(count):
        cursor = conn.execute("INSERT INTO brain_state (brain_id, generation) VALUES (?, 0)", (f"b{n}",))
        seq = int(cursor.lastrowid or 0)
        ddl = schema.fts_ddl(seq)
        conn.execute(ddl.replace(schema.TOKENIZER, "porter unicode61") if n in old else ddl)
    conn.execute("INSERT INTO brain_state (brain_id, generation) VALUES ('no table yet', 0)")
    return conn


def _steps(conn: sqlite3.Connection) -> tuple[int, list[int]]:
    return steps(conn, lambda: fts_retokenize.outdated(conn))


def test_the_outdated_tables_are_found_in_one_read_of_the_schema() -> None:
    (few, few_found), (many, many_found) = _steps(_brains(20, {3, 7})), _steps(_brains(200, {3, 150}))
    assert few_found == [4, 8] and many_found == [4, 151]
    assert many <= few * 10 * 1.5 + 20, (few, many)
