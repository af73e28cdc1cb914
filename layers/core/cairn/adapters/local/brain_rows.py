"""Which vector rows of a brain hold live chunks, and which of them pass a filter.

`BrainRows` is an immutable per-brain snapshot indexed by vector row: the chunk rowid using the
row (-1 when none: deleted, replaced or never committed), `active`, `current`, `created_ms`,
the validity range in epoch ms (open ends as the int64 extremes) and `importance` (NaN when
none). Loading it reads the whole brain (~0.2 s at 100k chunks), so the index loads it once and
then derives the next snapshot from each of its own writes (`changed`); a write by anyone else
shows up as a generation it did not make, and the snapshot is loaded again.

Filters: `active_only`, `current_only`, the created range, `valid_at` and `importance_min` are
masks; path prefixes, document ids, tags, any-of tag groups and facets each run one index-only
query that returns vector rows, and owners one that returns the rows to leave out.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from cairn.adapters.local.chunk_schema import epoch_ms, hidden_owners, prefix_range
from cairn.adapters.local.vector_store import Rows
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter

Mask = npt.NDArray[np.bool_]
Doubles = npt.NDArray[np.float64]
OPEN_FROM = np.iinfo(np.int64).min  # valid_from absent: valid since always
OPEN_TO = np.iinfo(np.int64).max  # valid_to absent: valid for ever
_CACHED_RESTRICTIONS = 16  # masks of one byte a row: 16 MB at a million rows
_INTS = 7  # rowid, vec_row, active, created_ms, is_current, valid_from_ms, valid_to_ms


@dataclass(frozen=True)
class Added:
    vec_row: int
    rowid: int
    active: bool
    created_ms: int
    current: bool = True
    valid_from_ms: int = OPEN_FROM
    valid_to_ms: int = OPEN_TO
    importance: float = float("nan")

    @classmethod
    def of(cls, chunk: Chunk, vec_row: int, rowid: int) -> Added:
        return cls(
            vec_row,
            rowid,
            chunk.active,
            epoch_ms(chunk.created_at),
            chunk.current,
            OPEN_FROM if chunk.valid_from is None else epoch_ms(chunk.valid_from),
            OPEN_TO if chunk.valid_to is None else epoch_ms(chunk.valid_to),
            float("nan") if chunk.importance is None else chunk.importance,
        )


@dataclass(frozen=True)
class BrainRows:
    generation: int
    rowid_of: Rows  # by vector row; -1 = no live chunk
    active: Mask
    created_ms: Rows
    current: Mask
    valid_from_ms: Rows
    valid_to_ms: Rows
    importance: Doubles
    # Rows each restricting query returned, by (sql, params): a snapshot never changes, so
    # repeated filters (a scope, a collection) skip their query until the next write.
    _restricted: dict[tuple[str, tuple[object, ...]], Mask] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @classmethod
    def load(cls, conn: sqlite3.Connection, brain_id: str, generation: int) -> BrainRows:
        rows = conn.execute(
            "SELECT rowid, vec_row, active, created_ms, is_current, coalesce(valid_from_ms, ?), "
            "coalesce(valid_to_ms, ?), importance FROM chunks WHERE brain_id = ?",
            (int(OPEN_FROM), int(OPEN_TO), brain_id),
        ).fetchall()
        ints = itertools.chain.from_iterable(row[:_INTS] for row in rows)
        table = np.fromiter(ints, dtype=np.int64, count=_INTS * len(rows)).reshape(-1, _INTS)
        importance = np.fromiter(
            (np.nan if row[_INTS] is None else row[_INTS] for row in rows), dtype=np.float64, count=len(rows)
        )
        size = int(table[:, 1].max()) + 1 if len(rows) else 0
        empty = cls.empty(generation, size)
        return empty._with(
            table[:, 1],
            table[:, 0],
            table[:, 2] == 1,
            table[:, 3],
            table[:, 4] == 1,
            table[:, 5],
            table[:, 6],
            importance,
        )

    @classmethod
    def empty(cls, generation: int, size: int) -> BrainRows:
        return cls(
            generation,
            np.full(size, -1, np.int64),
            np.zeros(size, np.bool_),
            np.zeros(size, np.int64),
            np.ones(size, np.bool_),
            np.full(size, OPEN_FROM, np.int64),
            np.full(size, OPEN_TO, np.int64),
            np.full(size, np.nan, np.float64),
        )

    def changed(
        self,
        generation: int,
        added: Sequence[Added],
        removed: Sequence[int],
        activated: Sequence[int] = (),
    ) -> BrainRows:
        """The snapshot after a write that added, removed and made active these vector rows."""
        size = max([self.rowid_of.size, *(a.vec_row + 1 for a in added)])
        grow = BrainRows.empty(generation, size - self.rowid_of.size)
        base = BrainRows(
            generation,
            *(
                np.concatenate([mine, extra])
                for mine, extra in zip(self._arrays(), grow._arrays(), strict=True)
            ),
        )
        base.rowid_of[np.asarray(removed, dtype=np.int64)] = -1
        base.active[np.asarray(activated, dtype=np.int64)] = True
        return base._with(
            np.array([a.vec_row for a in added], dtype=np.int64),
            np.array([a.rowid for a in added], dtype=np.int64),
            np.array([a.active for a in added], dtype=np.bool_),
            np.array([a.created_ms for a in added], dtype=np.int64),
            np.array([a.current for a in added], dtype=np.bool_),
            np.array([a.valid_from_ms for a in added], dtype=np.int64),
            np.array([a.valid_to_ms for a in added], dtype=np.int64),
            np.array([a.importance for a in added], dtype=np.float64),
        )

    def _arrays(self) -> tuple[npt.NDArray[np.generic], ...]:
        return (
            self.rowid_of,
            self.active,
            self.created_ms,
            self.current,
            self.valid_from_ms,
            self.valid_to_ms,
            self.importance,
        )

    def _with(
        self,
        vec_rows: Rows,
        rowids: Rows,
        active: Mask,
        created_ms: Rows,
        current: Mask,
        valid_from_ms: Rows,
        valid_to_ms: Rows,
        importance: Doubles,
    ) -> BrainRows:
        self.rowid_of[vec_rows] = rowids
        self.active[vec_rows] = active
        self.created_ms[vec_rows] = created_ms
        self.current[vec_rows] = current
        self.valid_from_ms[vec_rows] = valid_from_ms
        self.valid_to_ms[vec_rows] = valid_to_ms
        self.importance[vec_rows] = importance
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

    @cached_property
    def has_noncurrent(self) -> bool:
        return bool((self.live & ~self.current).any())

    def permuted(self, generation: int, sources: Rows) -> BrainRows:
        """The snapshot after compaction moved old row `sources[i]` to row i."""
        return BrainRows(
            generation,
            self.rowid_of[sources],
            self.active[sources],
            self.created_ms[sources],
            self.current[sources],
            self.valid_from_ms[sources],
            self.valid_to_ms[sources],
            self.importance[sources],
        )

    def select(self, conn: sqlite3.Connection, brain_id: str, chunk_filter: ChunkFilter) -> tuple[Rows, Rows]:
        """(vector rows, chunk rowids) of the live chunks that pass the filter."""
        vec_rows = np.flatnonzero(self.allowed(conn, brain_id, chunk_filter))
        return vec_rows, self.rowid_of[vec_rows]

    def _restriction(self, conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> Mask:
        key = (sql, tuple(params))
        hit = self._restricted.get(key)
        if hit is None:
            found = np.array([row[0] for row in conn.execute(sql, params).fetchall()], dtype=np.int64)
            hit = np.zeros(self.rowid_of.size, dtype=np.bool_)
            hit[found[found < hit.size]] = True  # rows past the snapshot are not live in it
            while len(self._restricted) >= _CACHED_RESTRICTIONS:
                self._restricted.pop(next(iter(self._restricted)), None)
            self._restricted[key] = hit
        return hit

    def allowed(self, conn: sqlite3.Connection, brain_id: str, chunk_filter: ChunkFilter) -> Mask:
        """By vector row: does it hold a live chunk that passes the filter."""
        f = chunk_filter
        mask = self.live & self.active if f.active_only else self.live.copy()
        if f.current_only:
            mask &= self.current
        if f.created_from is not None:
            mask &= self.created_ms >= epoch_ms(f.created_from)
        if f.created_to is not None:
            mask &= self.created_ms < epoch_ms(f.created_to)
        if f.valid_at is not None:
            moment = epoch_ms(f.valid_at)
            mask &= (self.valid_from_ms <= moment) & (self.valid_to_ms > moment)
        if f.importance_min is not None:
            with np.errstate(invalid="ignore"):
                mask &= self.importance >= f.importance_min  # NaN (no importance) never passes
        for sql, params in _restrictions(brain_id, f):
            if not mask.any():
                break
            mask &= self._restriction(conn, sql, params)
        for owner_brain, subject in f.owners:
            if owner_brain == brain_id and mask.any():
                hidden, params = hidden_owners(subject)
                sql = f"SELECT vec_row FROM chunk_facets WHERE brain_id = ? AND {hidden}"
                mask &= ~self._restriction(conn, sql, [brain_id, *params])
        return mask


class FilterMasks:
    """One search's `BrainRows.allowed` masks, by brain. Its keyword and vector legs both ask for
    them; each is computed once. Rows other than those a mask was made of (the cache moved on
    between the legs) get their own."""

    def __init__(self, conn: sqlite3.Connection, chunk_filter: ChunkFilter) -> None:
        self.conn, self.filter = conn, chunk_filter
        self._made: dict[str, tuple[BrainRows, Mask]] = {}

    def allowed(self, brain_id: str, rows: BrainRows) -> Mask:
        made = self._made.get(brain_id)
        if made is None or made[0] is not rows:
            made = self._made[brain_id] = (rows, rows.allowed(self.conn, brain_id, self.filter))
        return made[1]


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
    for group in f.any_tags:
        marks = ", ".join("?" * len(group))
        sql = f"SELECT vec_row FROM chunk_tags WHERE tag IN ({marks}) AND brain_id = ?"
        out.append((sql, [*group, brain_id]))
    for name, values in f.facets:
        marks = ", ".join("?" * len(values))
        sql = f"SELECT vec_row FROM chunk_facets WHERE name = ? AND value IN ({marks}) AND brain_id = ?"
        out.append((sql, [name, *values, brain_id]))
    return out
