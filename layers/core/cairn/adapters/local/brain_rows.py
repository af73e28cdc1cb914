"""Which vector rows of a brain hold live chunks, and which of them pass a filter.

`BrainRows` is an immutable per-brain snapshot indexed by vector row: the chunk rowid using the
row (-1 when none: deleted, replaced or never committed), `active` and `created_ms`. Loading it
reads the whole brain (~0.2 s at 100k chunks), so the index loads it once and then derives the
next snapshot from each of its own writes (`changed`); a write by anyone else shows up as a
generation it did not make, and the snapshot is loaded again.

Filters: `active_only` and the created range are masks; path prefixes, document ids and tags
each run one index-only query that returns vector rows.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from cairn.adapters.local.chunk_schema import epoch_ms, prefix_range
from cairn.adapters.local.vector_store import Rows
from cairn.ports.chunks import ChunkFilter

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Added:
    vec_row: int
    rowid: int
    active: bool
    created_ms: int


@dataclass(frozen=True)
class BrainRows:
    generation: int
    rowid_of: Rows  # by vector row; -1 = no live chunk
    active: Mask
    created_ms: Rows

    @classmethod
    def load(cls, conn: sqlite3.Connection, brain_id: str, generation: int) -> BrainRows:
        rows = conn.execute(
            "SELECT rowid, vec_row, active, created_ms FROM chunks WHERE brain_id = ?", (brain_id,)
        ).fetchall()
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=4 * len(rows))
        table = flat.reshape(-1, 4)
        size = int(table[:, 1].max()) + 1 if len(rows) else 0
        empty = cls(
            generation, np.full(size, -1, np.int64), np.zeros(size, np.bool_), np.zeros(size, np.int64)
        )
        return empty._with(table[:, 1], table[:, 0], table[:, 2] == 1, table[:, 3])

    def changed(
        self,
        generation: int,
        added: Sequence[Added],
        removed: Sequence[int],
        activated: Sequence[int] = (),
    ) -> BrainRows:
        """The snapshot after a write that added, removed and made active these vector rows."""
        size = max([self.rowid_of.size, *(a.vec_row + 1 for a in added)])
        grow = size - self.rowid_of.size
        base = BrainRows(
            generation,
            np.concatenate([self.rowid_of, np.full(grow, -1, np.int64)]),
            np.concatenate([self.active, np.zeros(grow, np.bool_)]),
            np.concatenate([self.created_ms, np.zeros(grow, np.int64)]),
        )
        base.rowid_of[np.asarray(removed, dtype=np.int64)] = -1
        base.active[np.asarray(activated, dtype=np.int64)] = True
        return base._with(
            np.array([a.vec_row for a in added], dtype=np.int64),
            np.array([a.rowid for a in added], dtype=np.int64),
            np.array([a.active for a in added], dtype=np.bool_),
            np.array([a.created_ms for a in added], dtype=np.int64),
        )

    def _with(self, vec_rows: Rows, rowids: Rows, active: Mask, created_ms: Rows) -> BrainRows:
        self.rowid_of[vec_rows] = rowids
        self.active[vec_rows] = active
        self.created_ms[vec_rows] = created_ms
        return self

    @cached_property
    def live(self) -> Mask:
        return self.rowid_of >= 0

    @cached_property
    def live_count(self) -> int:
        return int(self.live.sum())

    @cached_property
    def has_inactive(self) -> bool:
        return bool((self.live & ~self.active).any())

    def select(self, conn: sqlite3.Connection, brain_id: str, chunk_filter: ChunkFilter) -> tuple[Rows, Rows]:
        """(vector rows, chunk rowids) of the live chunks that pass the filter."""
        f = chunk_filter
        mask = self.live & self.active if f.active_only else self.live.copy()
        if f.created_from is not None:
            mask &= self.created_ms >= epoch_ms(f.created_from)
        if f.created_to is not None:
            mask &= self.created_ms < epoch_ms(f.created_to)
        for sql, params in _restrictions(brain_id, f):
            if not mask.any():
                break
            found = np.array([row[0] for row in conn.execute(sql, params).fetchall()], dtype=np.int64)
            hit = np.zeros(mask.size, dtype=np.bool_)
            hit[found[found < mask.size]] = True  # rows past the snapshot are not live in it
            mask &= hit
        vec_rows = np.flatnonzero(mask)
        return vec_rows, self.rowid_of[vec_rows]


def _restrictions(brain_id: str, f: ChunkFilter) -> list[tuple[str, Sequence[object]]]:
    """One index-only query per restricting filter part, each returning vector rows."""
    out: list[tuple[str, Sequence[object]]] = []
    if f.path_prefixes and "" not in f.path_prefixes:
        # One range per prefix joined by UNION ALL: SQLite then seeks the index once per range.
        parts, params = [], []
        for low, high in (prefix_range(prefix) for prefix in f.path_prefixes):
            bound = " AND path < ?" if high is not None else ""
            parts.append(f"SELECT vec_row FROM chunks WHERE brain_id = ? AND path >= ?{bound}")
            params += [brain_id, low] if high is None else [brain_id, low, high]
        out.append((" UNION ALL ".join(parts), params))
    if f.document_ids:
        marks = ", ".join("?" * len(f.document_ids))
        sql = f"SELECT vec_row FROM chunks WHERE brain_id = ? AND document_id IN ({marks})"
        out.append((sql, [brain_id, *f.document_ids]))
    for tag in dict.fromkeys(f.tags):
        out.append(("SELECT vec_row FROM chunk_tags WHERE tag = ? AND brain_id = ?", [tag, brain_id]))
    return out
