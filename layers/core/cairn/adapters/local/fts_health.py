"""Whether a brain's keyword index (its FTS5 table and term postings) can be read, and its rebuild.

A brain's FTS5 table is a virtual table over five ordinary ones SQLite keeps beside it (`_data`
the index's pages, `_idx` where each term's pages start, `_content` the rows' title, text and
context, `_docsize`, `_config`). One of them dropped, emptied or overwritten leaves a table SQLite
refuses to open ("vtable constructor failed", "invalid fts5 file format") or reads as corrupt
("database disk image is malformed"), or, with `_idx` emptied, one that silently finds nothing of
the terms it no longer knows where to look for. `problem` tells, cheaply (about 45 ms at 100,000
chunks, bench/keyword_check_100k.py): it reads rows spread over the table, asks FTS5 to find each
by some of its own tokens, and asks the term postings (fts_postings.py) for the same tokens; with
`deep` it also runs FTS5's own `integrity-check` (which reads the whole index: 1.5 s at 100,000
chunks, 2.6 s with the postings, so only `cairn check --deep` runs it) and checks
every postings segment and each term's count of rows against FTS5's.

`rebuild` makes the table again in the caller's write transaction: the rows' text is taken from
`_content` (the only copy the index holds: `chunks` has none), the damaged tables are made whole
enough for SQLite to drop them, the table is created afresh (with today's tokenizer) and filled,
its postings made again, and the brain's generation moved on. Chunks whose text cannot be read back
(`_content` itself lost or unreadable) are removed and returned, for the caller to index their
documents again from the records. A process killed meanwhile commits nothing; other processes
serving the file keep refusing the brain's searches as damaged until the commit, then read the
new table.
"""

from __future__ import annotations

import json
import re
import sqlite3

import numpy as np

from cairn import faults
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings, fts_postings_build
from cairn.adapters.local.fts_search import SMALL_TABLE
from cairn.adapters.local.fts_tokens import POSTING, TOKENS
from cairn.ports.chunks import Discarded

# SQLite's primary result codes for errors of the moment, not of the file's content: busy,
# locked, out of memory, read-only, interrupted, I/O, full, cannot open, locking protocol.
TRANSIENT = frozenset({5, 6, 7, 8, 9, 10, 13, 14, 15})
SAMPLES = 8  # rows read by the cheap probe, spread over the table's rowids
TERMS = 3  # of each row's tokens, looked up through FTS5 and the postings
_SHADOWS = ("data", "idx", "content", "docsize", "config")
_QUOTE = re.compile(r'"')


def problem(
    conn: sqlite3.Connection, brain_id: str, *, deep: bool = False, whole_content: bool = True
) -> str:
    """Why the brain's keyword index cannot be read, or "" when it can (read only). With
    `whole_content` the probe also reads every page of the `_content` table (about 120 ms of the
    probe's 200 at 100,000 chunks under load, bench/keyword_check_100k.py): a page SQLite finds
    malformed there is damage. A brain's first read or write in a process leaves that out (the
    rows it samples are still read); a check and the probe confirming an error do it."""
    state = schema.brain_state(conn, brain_id)
    if state is None:
        return ""
    table = schema.fts_table(state[0])
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is None:
        return "its table is missing"
    try:
        if whole_content:
            conn.execute(f"SELECT min(id), max(id) FROM {table}_content").fetchone()  # a scan
        return _probe(conn, table, state[1]) or (_deep(conn, table) if deep else "")
    except sqlite3.DatabaseError as exc:
        if transient(exc):  # a lock or the disk, not the index
            raise
        return str(exc)


def transient(exc: BaseException) -> bool:
    """Whether an error is one of the moment (TRANSIENT), not of what the file holds."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in TRANSIENT


def _probe(conn: sqlite3.Connection, table: str, generation: int) -> str:
    conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH 'cairnprobe' LIMIT 1").fetchall()
    postings = fts_postings.exists(conn, table)
    if postings != _exists(conn, fts_postings.names(table)[0]):
        return "half of its term postings is missing"
    if postings:
        fts_postings.averages(conn, table)
        size = POSTING.itemsize
        torn = conn.execute(
            f"SELECT 1 FROM {fts_postings.names(table)[0]} WHERE length(data) != n * {size} OR n < 1 LIMIT 1"
        ).fetchone()
        if torn is not None:
            return "its term postings are damaged"
    if not postings and (unsound := _partial_problem(conn, table, generation)):
        return unsound
    skip = fts_postings.skipped(conn, table) if postings else frozenset()
    for rowid in _sample(conn, table):
        row = conn.execute(f"SELECT title, text, context FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            return f"row {rowid} cannot be read"
        mine = TOKENS.postings([(rowid, (row[0], row[1], row[2]))], frozenset()).by_term()
        # Tokens that spell themselves, the last in term order: a term FTS5 cannot find the page of
        # (`_idx` lost) is still found when it sits on the segment's first page.
        terms = [t for t in sorted(mine) if TOKENS.of_term(t) == (t,)][-TERMS:]
        if terms:
            query = " ".join('"' + _QUOTE.sub('""', t) + '"' for t in terms)
            found = conn.execute(  # ranked: bm25() reads the row's sizes and the table's averages
                f"SELECT bm25({table}) FROM {table} WHERE {table} MATCH ? AND rowid = ?", (query, rowid)
            )
            if found.fetchone() is None:
                return f"row {rowid} is not found by its own words"
        for term in terms if postings else []:
            if term not in skip and not _posted(conn, table, term, rowid, mine[term]):
                return f"the term postings do not hold row {rowid}"
    return ""


def _partial_problem(conn: sqlite3.Connection, table: str, generation: int) -> str:
    """A postings build under way (fts_postings_build.py) whose tables every write of the brain
    keeps in step: unreadable or torn, they would fail each such write, or end in the postings."""
    try:
        found = fts_postings_build.progress(conn, table)
    except ValueError:
        return "the term postings being built are damaged"
    if found is None:
        return ""
    if found.generation != generation:
        return ""  # out of step: the next step of the build discards them, no write reads them
    partial = fts_postings.partial_names(table)[0]
    size = POSTING.itemsize
    if (
        not _exists(conn, partial)
        or conn.execute(
            f"SELECT 1 FROM {partial} WHERE length(data) != n * {size} OR n < 1 LIMIT 1"
        ).fetchone()
    ):
        return "the term postings being built are damaged"
    return ""


def _sample(conn: sqlite3.Connection, table: str) -> list[int]:
    low, high = conn.execute(  # each its own query: min() and max() together scan the table
        f"SELECT (SELECT min(id) FROM {table}_content), (SELECT max(id) FROM {table}_content)"
    ).fetchone()
    if low is None:
        return []
    found: dict[int, None] = {}
    for i in range(SAMPLES):
        at = low + (high - low) * i // max(SAMPLES - 1, 1)
        row = conn.execute(
            f"SELECT id FROM {table}_content WHERE id >= ? ORDER BY id LIMIT 1", (at,)
        ).fetchone()
        found[int(row[0])] = None
    return list(found)


def _posted(conn: sqlite3.Connection, table: str, term: str, rowid: int, expected: np.ndarray) -> bool:
    row = conn.execute(
        f"SELECT data FROM {fts_postings.names(table)[0]} WHERE term = ? AND start <= ? "
        "ORDER BY start DESC LIMIT 1",
        (term, rowid),
    ).fetchone()
    if row is None:
        return False
    held = np.frombuffer(row[0], dtype=POSTING)
    mine = held[held["rowid"] == rowid]
    want = expected.astype(POSTING)
    return len(mine) == 1 and all(mine[0][k] == want[0][k] for k in ("c0", "c1", "c2", "length"))


def _deep(conn: sqlite3.Connection, table: str) -> str:
    conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    if not fts_postings.exists(conn, table):
        return ""
    skip = fts_postings.skipped(conn, table)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_rows USING fts5vocab(main, '{table}', 'row')"
    )
    try:
        counts = dict(conn.execute(f"SELECT term, doc FROM temp.{table}_rows").fetchall())
    finally:
        conn.execute(f"DROP TABLE IF EXISTS temp.{table}_rows")
    seen: set[str] = set()
    term: str | None = None
    held, last = 0, -1
    for name, start, n, data in conn.execute(
        f"SELECT term, start, n, data FROM {fts_postings.names(table)[0]} ORDER BY term, start"
    ):
        rowids = np.frombuffer(data, dtype=POSTING)["rowid"].astype(np.int64)
        if name != term:
            if term is not None and counts.get(term) != held:
                return f"the term postings of {term!r} do not match its rows"
            term, held, last = name, 0, -1
            seen.add(name)
        if len(rowids) != n or rowids[0] != start or rowids[0] <= last or (np.diff(rowids) <= 0).any():
            return f"the term postings of {name!r} are damaged"
        held, last = held + n, int(rowids[-1])
    if term is not None and counts.get(term) != held:
        return f"the term postings of {term!r} do not match its rows"
    missing = [t for t in counts if t not in seen and t not in skip]
    return f"the term postings lack {len(missing)} terms" if missing else ""


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def rebuild(conn: sqlite3.Connection, brain_id: str) -> tuple[int, dict[str, Discarded]]:
    """Inside a write transaction: make the brain's FTS5 table and term postings again from the
    rows' text; (rows rebuilt, document id -> the chunks removed because their text was lost)."""
    state = schema.brain_state(conn, brain_id)
    if state is None:
        return 0, {}
    seq, table = state[0], schema.fts_table(state[0])
    had_postings = _exists(conn, fts_postings.names(table)[0]) or _exists(conn, fts_postings.names(table)[1])
    conn.execute("DROP TABLE IF EXISTS temp.keyword_salvage")
    conn.execute("CREATE TEMP TABLE keyword_salvage (id INTEGER PRIMARY KEY, c0, c1, c2)")
    try:
        conn.execute(
            f"INSERT INTO temp.keyword_salvage SELECT t.id, t.c0, t.c1, t.c2 FROM {table}_content t "
            "JOIN chunks c ON c.rowid = t.id WHERE c.brain_id = ?",
            (brain_id,),
        )
    except sqlite3.DatabaseError:  # no text left to rebuild from: those documents are indexed again
        conn.execute("DELETE FROM temp.keyword_salvage")
    _remove_table(conn, table)
    fts_postings.drop(conn, table)
    conn.execute(schema.fts_ddl(seq))
    conn.execute(f"INSERT INTO {table} (rowid, title, text, context) SELECT * FROM temp.keyword_salvage")
    lost = _remove_lost(conn, brain_id)
    faults.reached("index.keywords_rebuilt")
    (rows,) = conn.execute("SELECT count(*) FROM temp.keyword_salvage").fetchone()
    conn.execute("DROP TABLE temp.keyword_salvage")
    if had_postings or rows > SMALL_TABLE:
        fts_postings.rebuild(conn, table)
    conn.execute("UPDATE brain_state SET generation = generation + 1 WHERE seq = ?", (seq,))
    return int(rows), lost


def _remove_table(conn: sqlite3.Connection, table: str) -> None:
    """Drop the FTS5 table and what SQLite keeps beside it, however damaged: SQLite opens a virtual
    table to drop it, so the tables it opens are first made as a new empty table has them."""
    if not _exists(conn, table):
        for suffix in _SHADOWS:
            conn.execute(f"DROP TABLE IF EXISTS {table}_{suffix}")
        return
    fresh = _fresh_shadows()
    for suffix in _SHADOWS:
        ddl, rows = fresh[suffix]
        conn.execute(f"DROP TABLE IF EXISTS {table}_{suffix}")
        conn.execute(ddl.replace("'x_", f"'{table}_", 1))
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table}_{suffix} VALUES ({marks})", rows)
    conn.execute(f"DROP TABLE {table}")


def _fresh_shadows() -> dict[str, tuple[str, list[tuple[object, ...]]]]:
    """Each shadow table's definition and rows in an empty FTS5 table of this SQLite library."""
    blank = sqlite3.connect(":memory:")
    try:
        blank.execute("CREATE VIRTUAL TABLE x USING fts5(title, text, context)")
        return {
            suffix: (
                blank.execute("SELECT sql FROM sqlite_master WHERE name = ?", (f"x_{suffix}",)).fetchone()[0],
                blank.execute(f"SELECT * FROM x_{suffix}").fetchall(),
            )
            for suffix in _SHADOWS
        }
    finally:
        blank.close()


def _remove_lost(conn: sqlite3.Connection, brain_id: str) -> dict[str, Discarded]:
    """Remove the brain's chunks whose text was not salvaged; document id -> what was removed."""
    lost = conn.execute(
        "SELECT rowid, id, document_id FROM chunks WHERE brain_id = ? "
        "AND rowid NOT IN (SELECT id FROM temp.keyword_salvage) ORDER BY document_id, ordinal",
        (brain_id,),
    ).fetchall()
    if not lost:
        return {}
    rowids = json.dumps([r[0] for r in lost])
    for table, column in (
        ("chunk_tags", "chunk_rowid"),
        ("chunk_facets", "chunk_rowid"),
        ("chunks", "rowid"),
    ):
        conn.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT value FROM json_each(?))", (rowids,))
    removed: dict[str, list[str]] = {}
    for _, chunk_id, document_id in lost:
        removed.setdefault(document_id, []).append(chunk_id)
    return {doc: Discarded(tuple(ids)) for doc, ids in removed.items()}
