"""Which vector rows of a brain pass a filter: cached per-brain arrays plus index-only SQL.

The cache holds every chunk of a brain (rowid, vector row, active, created_ms), sorted by
rowid, and is rebuilt when the brain's generation changes. `active_only` and the created
range are masks over it; path prefixes, document ids and tags each run one query that reads
only an index and returns rowids, which are matched to cache positions by binary search.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.adapters.local.chunk_schema import epoch_ms, prefix_range
from cairn.adapters.local.vector_store import Rows
from cairn.ports.chunks import ChunkFilter

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class BrainRows:
    generation: int
    rowids: Rows  # ascending
    vec_rows: Rows
    active: Mask
    created_ms: Rows

    @property
    def has_inactive(self) -> bool:
        return not bool(self.active.all())

    @classmethod
    def load(cls, conn: sqlite3.Connection, brain_id: str, generation: int) -> BrainRows:
        rows = conn.execute(
            "SELECT rowid, vec_row, active, created_ms FROM chunks WHERE brain_id = ?", (brain_id,)
        ).fetchall()
        table = np.array(rows, dtype=np.int64).reshape(-1, 4)
        table = table[np.argsort(table[:, 0], kind="stable")]
        return cls(generation, table[:, 0], table[:, 1], table[:, 2] == 1, table[:, 3])

    def select(self, conn: sqlite3.Connection, brain_id: str, chunk_filter: ChunkFilter) -> tuple[Rows, Rows]:
        """(chunk rowids, vector rows) of the chunks that pass the filter."""
        f = chunk_filter
        mask = self.active.copy() if f.active_only else np.ones(self.rowids.size, dtype=np.bool_)
        if f.created_from is not None:
            mask &= self.created_ms >= epoch_ms(f.created_from)
        if f.created_to is not None:
            mask &= self.created_ms < epoch_ms(f.created_to)
        for sql, params in _restrictions(brain_id, f):
            if not mask.any():
                break
            found = conn.execute(sql, params).fetchall()
            mask &= self._positions(np.array([row[0] for row in found], dtype=np.int64))
        return self.rowids[mask], self.vec_rows[mask]

    def _positions(self, rowids: Rows) -> Mask:
        """Mask of the cache positions holding these rowids (rowids of other brains ignored)."""
        hit = np.zeros(self.rowids.size, dtype=np.bool_)
        if rowids.size and self.rowids.size:
            at = np.minimum(np.searchsorted(self.rowids, rowids), self.rowids.size - 1)
            hit[at[self.rowids[at] == rowids]] = True
        return hit


def _restrictions(brain_id: str, f: ChunkFilter) -> list[tuple[str, Sequence[object]]]:
    """One index-only query per restricting filter part, each returning rowids."""
    out: list[tuple[str, Sequence[object]]] = []
    if f.path_prefixes and "" not in f.path_prefixes:
        ranges = [prefix_range(prefix) for prefix in f.path_prefixes]
        sql = " OR ".join(
            "(path >= ? AND path < ?)" if high is not None else "path >= ?" for _, high in ranges
        )
        params: list[object] = [brain_id]
        for low, high in ranges:
            params += [low] if high is None else [low, high]
        out.append((f"SELECT rowid FROM chunks WHERE brain_id = ? AND ({sql})", params))
    if f.document_ids:
        marks = ", ".join("?" * len(f.document_ids))
        out.append((f"SELECT rowid FROM chunks WHERE brain_id = ? AND document_id IN ({marks})",
                    [brain_id, *f.document_ids]))  # fmt: skip
    out += [("SELECT chunk_rowid FROM chunk_tags WHERE tag = ?", [tag]) for tag in dict.fromkeys(f.tags)]
    return out
