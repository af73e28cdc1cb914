"""Tokens exactly as the brains' FTS5 tables make them, from FTS5 itself.

A private in-memory SQLite database holds a contentless FTS5 table with the brains' tokenizer
and an `instance` fts5vocab table over it: rows written there come back as (term, row, column)
counts, and a query term comes back as the token(s) FTS5 will look up (porter stems, folds
case and diacritics). Using the same SQLite library rather than a tokenizer written again in
Python is what makes the term postings (fts_postings.py) agree with the FTS5 index term for term.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cairn.adapters.local.chunk_schema import TOKENIZER

SATURATED = 0xFFFF  # a count or row length this high (or higher) is stored as this
# One posting: the row, its title / text / context counts of the term and its length D (all
# columns' tokens, as FTS5's docsize counts them); little-endian, so a query reads six u16 each.
POSTING = np.dtype([("rowid", "<u4"), ("c0", "<u2"), ("c1", "<u2"), ("c2", "<u2"), ("length", "<u2")])
_COUNTS = np.dtype([("rowid", ">u4"), ("c0", ">u2"), ("c1", ">u2"), ("c2", ">u2")])  # printf('%x')

Texts = tuple[str | None, str | None, str | None]  # title, text, context


@dataclass(frozen=True)
class Postings:
    """Postings grouped by term, each group sorted by rowid: group i is
    records[starts[i]:starts[i + 1]]."""

    terms: list[str]
    starts: np.ndarray
    records: np.ndarray

    def by_term(self) -> dict[str, np.ndarray]:
        s = self.starts.tolist()
        return {term: self.records[s[i] : s[i + 1]] for i, term in enumerate(self.terms)}


class Fts5Tokens:
    def __init__(self, tokenizer: str = TOKENIZER) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE tok USING fts5(title, text, context, content='', tokenize='{tokenizer}')"
        )
        self._conn.execute("CREATE VIRTUAL TABLE tok_v USING fts5vocab(tok, 'instance')")
        self._terms: dict[str, tuple[str, ...]] = {}

    def of_term(self, term: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of one query term, in order (cached)."""
        found = self._terms.get(term)
        if found is not None:
            return found
        with self._lock:
            self._conn.execute("INSERT INTO tok (rowid, title, text, context) VALUES (1, '', ?, '')", (term,))
            rows = self._conn.execute("SELECT term FROM tok_v ORDER BY col, offset").fetchall()
            self._conn.execute("INSERT INTO tok (tok) VALUES ('delete-all')")
        found = tuple(r[0] for r in rows)
        if len(self._terms) < 100_000:
            self._terms[term] = found
        return found

    def postings(self, rows: Sequence[tuple[int, Texts]], skip: frozenset[str]) -> Postings:
        """The postings of these rows (rowid, texts) by term, leaving out the terms in `skip`
        (they still count in each row's length)."""
        if not rows:
            return Postings([], np.zeros(1, dtype=np.int64), np.empty(0, dtype=POSTING))
        if max(rowid for rowid, _ in rows) >= 1 << 32:
            raise ValueError("rowids of 2^32 and above do not fit the postings")
        sql = (
            f"SELECT term, group_concat(printf('%08x%04x%04x%04x', doc, min(c0, {SATURATED}), "
            f"min(c1, {SATURATED}), min(c2, {SATURATED})), '') "
            "FROM (SELECT term, doc, sum(col = 'title') AS c0, sum(col = 'text') AS c1, "
            "sum(col = 'context') AS c2 FROM tok_v GROUP BY term, doc) GROUP BY term"
        )
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO tok (rowid, title, text, context) VALUES (?, ?, ?, ?)",
                    [(rowid, *texts) for rowid, texts in rows],
                )
                found = self._conn.execute(sql).fetchall()
                self._conn.execute("INSERT INTO tok (tok) VALUES ('delete-all')")
            finally:
                self._conn.execute("COMMIT")
        sizes = [len(packed) // 20 for _, packed in found]
        counts = np.frombuffer(bytes.fromhex("".join(packed for _, packed in found)), dtype=_COUNTS)
        rowids = counts["rowid"].astype(np.int64)
        per_row = counts["c0"].astype(np.int64) + counts["c1"] + counts["c2"]
        known, index = np.unique(rowids, return_inverse=True)
        lengths = np.zeros(len(known), dtype=np.int64)
        np.add.at(lengths, index, per_row)
        records = np.empty(len(counts), dtype=POSTING)
        for name in ("rowid", "c0", "c1", "c2"):
            records[name] = counts[name]
        records["length"] = np.minimum(lengths[index], SATURATED)
        keep = np.array([term not in skip for term, _ in found], dtype=bool)
        group = np.repeat(np.arange(len(found)), sizes)
        chosen = keep[group]
        records, group = records[chosen], group[chosen]
        records = records[np.lexsort((records["rowid"], group))]
        kept_sizes = np.array(sizes, dtype=np.int64)[keep]
        starts = np.zeros(len(kept_sizes) + 1, dtype=np.int64)
        np.cumsum(kept_sizes, out=starts[1:])
        return Postings(
            [term for (term, _), k in zip(found, keep.tolist(), strict=True) if k], starts, records
        )


TOKENS = Fts5Tokens()
