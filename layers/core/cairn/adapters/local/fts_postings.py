"""Term postings beside each brain's FTS5 table: what the BM25 leg scores.

`{fts}_postings` holds, per term, the rows holding it in segments of at most CAP consecutive
postings (by rowid), keyed by (term, first rowid): each posting is the row, its title / text /
context counts of the term and the row's length (fts_tokens.POSTING), as FTS5 itself tokenized
the row, so a term's df (the rows bm25() counts) is the sum of its segments' `n`. They are kept
in the write transaction that changes the FTS5 table: new rows join the term's last segment,
removed rows leave theirs, and only the segments touched are rewritten.

The tokens of the stopwords (`{fts}_skipped`, fixed when the table is made) get no postings:
query terms never are stopwords, and they are about half of all tokens. A query term whose token
is one of them (a word stemming like a stopword) is ranked by FTS5 instead.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from cairn.adapters.local.fts_query import STOPWORDS
from cairn.adapters.local.fts_tokens import POSTING, TOKENS, Postings, Texts

CAP = 512  # postings per segment at most: a write rewrites at most this many per term
STEP = 4096  # rows read per step of a build; a stop is heeded between steps


class BuildStopped(Exception):
    """A build was asked to stop between two steps: the steps it committed are kept, and the next
    build goes on from there (fts_postings_build.py); the table is searched through FTS5, exactly,
    until the postings are whole."""


def names(table: str) -> tuple[str, str]:
    return f"{table}_postings", f"{table}_skipped"


def partial_names(table: str) -> tuple[str, str]:
    """The tables of a build under way (fts_postings_build.py): its postings so far, where it stands."""
    return f"{table}_partial", f"{table}_building"


def drop(conn: sqlite3.Connection, table: str) -> None:
    """Drop the postings of an FTS5 table, whole or part built (its brain is being dropped, or
    they are made again)."""
    for name in (*names(table), *partial_names(table)):
        conn.execute(f"DROP TABLE IF EXISTS {name}")


def create(conn: sqlite3.Connection, postings: str) -> None:
    conn.execute(
        f"CREATE TABLE {postings} (term TEXT NOT NULL, start INTEGER NOT NULL, n INTEGER NOT NULL, "
        "data BLOB NOT NULL, PRIMARY KEY (term, start)) WITHOUT ROWID"
    )


def stop_tokens() -> frozenset[str]:
    """The tokens that get no postings: the stopwords' (`{fts}_skipped` keeps them as the postings
    were made)."""
    return frozenset(token for word in STOPWORDS for token in TOKENS.of_term(word))


def exists(conn: sqlite3.Connection, table: str) -> bool:
    # By the table's name, as SQLite finds a table: `sqlite_master` has no index, and reading it
    # costs every search and write its seven rows a brain (1.7 ms at 1,000 brains).
    row = conn.execute("SELECT 1 FROM pragma_table_info(?) LIMIT 1", (names(table)[1],)).fetchone()
    return row is not None


def skipped(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    return frozenset(r[0] for r in conn.execute(f"SELECT term FROM {names(table)[1]}"))


def averages(conn: sqlite3.Connection, table: str) -> tuple[int, int]:
    """(rows, tokens in all columns) as bm25() reads them: FTS5's averages record (varints)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None:
        return 0, 0
    data = bytes(row[0])
    values: list[int] = []
    i = 0
    while i < len(data):
        value = 0
        for k in range(9):
            byte = data[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values[0], sum(values[1:])) if values else (0, 0)


class PostingsWriter:
    """The changes one write transaction makes to one brain's FTS5 table, applied at its end. For
    a build under way (`below` set), to its postings so far (`into`), made leaving out `skip`:
    only rows below `below` have postings there yet; the build reads the others later."""

    def __init__(
        self,
        table: str,
        *,
        into: str | None = None,
        skip: frozenset[str] | None = None,
        below: int | None = None,
    ) -> None:
        self.table = table
        self.into = into or names(table)[0]
        self.skip = skip
        self.below = below
        self.added: dict[int, Texts] = {}
        self.removed: dict[int, Texts] = {}  # rows indexed before this transaction: old texts

    def insert(self, rowid: int, texts: Texts) -> None:
        self.added[rowid] = texts

    def remove(self, rowid: int, old: Texts) -> None:
        if self.added.pop(rowid, None) is None:
            self.removed.setdefault(rowid, old)

    def replace(self, rowid: int, old: Texts, new: Texts) -> None:
        if rowid not in self.added:
            self.removed.setdefault(rowid, old)
        self.added[rowid] = new

    def apply(self, conn: sqlite3.Connection) -> None:
        removed, added = sorted(self.removed.items()), sorted(self.added.items())
        if self.below is not None:
            removed = [row for row in removed if row[0] < self.below]
            added = [row for row in added if row[0] < self.below]
        if not added and not removed:
            return
        skip = self.skip if self.skip is not None else skipped(conn, self.table)
        gone = TOKENS.postings(removed, skip).by_term()
        new = TOKENS.postings(added, skip)
        for term, records in gone.items():  # removals first: a rewritten row's old postings go
            _merge(conn, self.into, term, records["rowid"].astype(np.int64), records[:0])
        append(conn, self.into, new)


def append(conn: sqlite3.Connection, postings: str, new: Postings) -> None:
    """Add new rows' postings to the table `postings`. Rows usually come after every row a term
    already has: their bytes then extend the term's last segment (split at CAP) without decoding
    anything."""
    last = {
        term: (start, n, data)
        for term, start, n, data in conn.execute(
            f"SELECT j.value, p.start, p.n, p.data FROM json_each(?) j CROSS JOIN {postings} p "
            f"ON p.term = j.value AND p.start = (SELECT max(start) FROM {postings} WHERE term = j.value)",
            (json.dumps(new.terms),),
        )
    }
    size = POSTING.itemsize
    data = new.records.astype(POSTING).tobytes()
    starts = new.starts.tolist()
    rows: list[tuple[str, int, int, bytes]] = []
    for i, term in enumerate(new.terms):
        fresh = data[starts[i] * size : starts[i + 1] * size]
        tail = last.get(term)
        if tail is None:
            rows += _segments(term, fresh, None)
        elif _rowid(fresh, 0) > _rowid(tail[2], tail[1] - 1):
            rows += _segments(term, tail[2] + fresh, tail[0])
        else:  # a row below the term's last one (a reused rowid): merge in order
            records = new.records[starts[i] : starts[i + 1]]
            _merge(conn, postings, term, np.empty(0, dtype=np.int64), records)
    conn.executemany(f"INSERT OR REPLACE INTO {postings} (term, start, n, data) VALUES (?, ?, ?, ?)", rows)


def _rowid(data: bytes, index: int) -> int:
    at = index * POSTING.itemsize
    return int.from_bytes(data[at : at + 4], "little")


def _segments(term: str, data: bytes, first: int | None) -> list[tuple[str, int, int, bytes]]:
    """(term, start, n, data) rows of at most CAP postings; the first keeps start `first`."""
    size = POSTING.itemsize
    count = len(data) // size
    out = []
    for i in range(0, count, CAP):
        start = first if i == 0 and first is not None else _rowid(data, i)
        out.append((term, start, min(CAP, count - i), data[i * size : (i + CAP) * size]))
    return out


def _merge(conn: sqlite3.Connection, postings: str, term: str, purge: np.ndarray, fresh: np.ndarray) -> None:
    """Rewrite the term's segments (in the table `postings`) that hold or will hold these rows."""
    touched = np.concatenate([purge, fresh["rowid"].astype(np.int64)])
    low, high = int(touched.min()), int(touched.max())
    loaded = conn.execute(
        f"SELECT start, data FROM {postings} WHERE term = ?1 AND start <= ?3 AND start >= "
        f"coalesce((SELECT max(start) FROM {postings} WHERE term = ?1 AND start <= ?2), -1)",
        (term, low, high),
    ).fetchall()
    old = np.concatenate([np.frombuffer(data, dtype=POSTING) for _, data in loaded] or [fresh[:0]])
    old = old[~np.isin(old["rowid"].astype(np.int64), purge)]  # before the rows' new postings join
    merged = np.concatenate([old, fresh])
    merged = merged[np.argsort(merged["rowid"], kind="stable")]
    conn.executemany(f"DELETE FROM {postings} WHERE term = ? AND start = ?", [(term, s) for s, _ in loaded])
    _insert(conn, postings, term, merged)


def _insert(conn: sqlite3.Connection, postings: str, term: str, records: np.ndarray) -> None:
    data = records.astype(POSTING).tobytes()
    size = POSTING.itemsize
    rows = records["rowid"].tolist()
    conn.executemany(
        f"INSERT INTO {postings} (term, start, n, data) VALUES (?, ?, ?, ?)",
        [
            (term, rows[i], min(CAP, len(rows) - i), data[i * size : (i + CAP) * size])
            for i in range(0, len(rows), CAP)
        ],
    )


def ensure(conn: sqlite3.Connection, table: str) -> None:
    """Give an FTS5 table its postings, filled from its rows, in the caller's transaction."""
    if not exists(conn, table):
        rebuild(conn, table)


def make_skipped(conn: sqlite3.Connection, table: str, skip: frozenset[str]) -> None:
    """The table of the tokens left out, whose presence says the postings are whole (`exists`)."""
    skipped_table = names(table)[1]
    conn.execute(f"CREATE TABLE {skipped_table} (term TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.executemany(f"INSERT INTO {skipped_table} (term) VALUES (?)", [(t,) for t in sorted(skip)])


def rebuild(conn: sqlite3.Connection, table: str, step: int | None = None) -> None:
    """(Re)make the postings of an FTS5 table from its rows, `step` rowids at a time (STEP), in
    the caller's transaction (a build in steps of their own: fts_postings_build.py)."""
    step = step or STEP
    postings = names(table)[0]
    drop(conn, table)
    create(conn, postings)
    skip = stop_tokens()
    make_skipped(conn, table, skip)
    top = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
    tail: dict[str, np.ndarray] = {}  # each term's postings not yet written (under CAP)
    for low in range(0, int(top or 0) + 1, step):
        rows = conn.execute(
            f"SELECT rowid, title, text, context FROM {table} WHERE rowid >= ? AND rowid < ?",
            (low, low + step),
        ).fetchall()
        found = TOKENS.postings([(int(r[0]), (r[1], r[2], r[3])) for r in rows], skip).by_term()
        for term, records in found.items():
            pending = np.concatenate([tail[term], records]) if term in tail else records
            whole = len(pending) - len(pending) % CAP
            if whole:
                _insert(conn, postings, term, pending[:whole])
            tail[term] = pending[whole:]
    for term, records in tail.items():
        if len(records):
            _insert(conn, postings, term, records)
