"""The embedded ChunkIndex's search: its two legs over one snapshot, fused by weighted RRF.

Both legs apply the whole filter before cutting their candidate pool: BM25 (chunk_reads.py,
fts_search.py) joins the chunks table in SQL, the vector leg passes the rows the filter lets
through to the graph as a bitmap (ann_index.py), or scores them exactly when they are few; either
way the candidates' cosines are computed exactly from the file. The filter's masks are computed
once per brain for both legs (brain_rows.FilterMasks), over the cached rows (cached_rows.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import numpy.typing as npt

from cairn.adapters.local import chunk_reads as reads
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import vector_health, vector_store
from cairn.adapters.local.ann_index import AnnShrunk
from cairn.adapters.local.brain_rows import BrainRows, FilterMasks
from cairn.adapters.local.cached_rows import CachedRows
from cairn.adapters.local.fts_boolean import leg_terms
from cairn.adapters.local.fts_damage import KeywordHealth
from cairn.adapters.local.rrf import Leg, fused_head
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.adapters.local.vector_compaction import VectorMaintenance
from cairn.adapters.local.vector_health import FileHealth
from cairn.adapters.local.vector_store import Floats, Rows, VectorStore
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkHit, ChunkQuery, widened


class ChunkSearch:
    def __init__(
        self,
        db: ThreadConnections,
        vectors: VectorStore,
        rows: CachedRows,
        health: FileHealth,
        keywords: KeywordHealth,
        maintenance: VectorMaintenance,
        *,
        dimension: int,
        bm25_weights: tuple[float, float, float],
        exact_max_rows: int,
        forget: Callable[[str], None],
    ) -> None:
        self._db = db
        self._vectors = vectors
        self._rows = rows
        self._health = health
        self._keywords = keywords
        self._maintenance = maintenance
        self.dimension = dimension
        self.bm25_weights = bm25_weights
        self.exact_max_rows = exact_max_rows
        self._forget = forget  # everything the index keeps of a brain dropped by another process

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        if query.rrf_k < 0 or query.bm25_weight < 0 or query.vector_weight < 0:
            raise InvalidInput("rrf_k and the leg weights must not be negative")
        if query.top_k <= 0 or not query.filter.brain_ids:
            return []
        pool = max(query.candidate_pool, query.top_k)
        use_vector = query.vector is not None and query.vector_weight > 0
        vector = vector_store.query_unit(query.vector, self.dimension) if use_vector else None
        if vector is not None:
            self._health.ensure_checked(query.filter.brain_ids)
        try:
            return self._search(query, pool, vector)
        except vector_store.VectorFileShrunk as cut:  # the check writes what it finds: after the snapshot
            self._health.check(cut.brain_id)
            raise vector_health.IndexDamaged() from None

    def rows_of(self, conn: sqlite3.Connection) -> Callable[[str, int], BrainRows]:
        return partial(self._rows.of, conn)

    def _search(self, query: ChunkQuery, pool: int, vector: Floats | None) -> list[ChunkHit]:
        with self._db.snapshot() as conn:
            brains = self._known(conn, query.filter.brain_ids)
            with self._keywords.reading(conn, brains):  # every leg reads the keyword tables
                return self._searched(conn, query, pool, vector, brains)

    def _searched(
        self,
        conn: sqlite3.Connection,
        query: ChunkQuery,
        pool: int,
        vector: Floats | None,
        brains: dict[str, tuple[int, int]],
    ) -> list[ChunkHit]:
        boolean, terms = query.boolean, leg_terms(query)
        if terms:  # damage that raises nothing (terms silently not found) is found by a probe
            self._keywords.ensure_sound(conn, brains)
        masks = FilterMasks(conn, query.filter)  # each brain's, once for both legs
        bm25 = (
            reads.bm25_leg(conn, self.rows_of(conn), self.bm25_weights, terms, boolean, masks, brains, pool)
            if terms
            else {}
        )
        similar = self._vector_leg(conn, vector, masks, brains, pool) if vector is not None else {}
        # Fused by rowid, so only the fused head's rows are read (and the ids of rows tied in it).
        legs = [Leg(list(bm25), query.bm25_weight), Leg(list(similar), query.vector_weight)]
        chunks: dict[int, Chunk] = {}
        asked = query
        while True:
            fused = fused_head(
                legs, asked.rrf_k, asked.top_k, asked.nearest, names=partial(reads.ids_of, conn)
            )
            chunks.update(reads.load_rows(conn, brains, [f.id for f in fused if f.id not in chunks]))
            unseen = {f.id for f in fused} - chunks.keys()
            if unseen:
                # Rows the cached vector rows know and this snapshot does not (written since it
                # began, cached_rows.py): fused again without them, as if the legs never had them.
                legs = [Leg([r for r in leg.ids if r not in unseen], leg.weight) for leg in legs]
                continue
            hits = [reads.hit(f, chunks[f.id], bm25, similar) for f in fused]
            wider = widened(asked, hits)  # the legs in hand: only the new head's rows are read
            if wider is None:
                return hits
            asked = wider

    def _vector_leg(
        self,
        conn: sqlite3.Connection,
        vector: Floats,
        masks: FilterMasks,
        brains: dict[str, tuple[int, int]],
        pool: int,
    ) -> dict[int, float]:
        """rowid → cosine similarity, best first, over the rows the filter lets through."""
        sims: list[Floats] = []
        rowids: list[Rows] = []
        for brain_id, (_seq, generation) in brains.items():
            rows = self._rows.of(conn, brain_id, generation)
            epoch = schema.vector_epoch(conn, brain_id)
            self._health.guard(conn, brain_id, epoch)
            allowed = masks.allowed(brain_id, rows)
            try:
                vec_rows = self._candidates(brain_id, epoch, vector, allowed, pool, rows.live_count)
                sims.append(self._vectors.file(brain_id, epoch).similarities(vec_rows, vector))
            except FileNotFoundError:  # gone since the snapshot: dropped, or compacted elsewhere
                continue
            except (
                vector_store.VectorFileShrunk
            ) as cut:  # cut short under us: its check records the loss and a rebuild
                cut.brain_id = brain_id
                raise
            rowids.append(rows.rowid_of[vec_rows])
        if not rowids:
            return {}
        all_sims, all_rowids = np.concatenate(sims), np.concatenate(rowids)
        top = (
            np.argpartition(-all_sims, pool - 1)[:pool] if all_sims.size > pool else np.arange(all_sims.size)
        )
        top = top[np.lexsort((all_rowids[top], -all_sims[top]))]
        return dict(zip(all_rowids[top].tolist(), all_sims[top].tolist(), strict=True))

    def _candidates(
        self, brain_id: str, epoch: int, vector: Floats, allowed: npt.NDArray[np.bool_], pool: int, live: int
    ) -> Rows:
        """The vector rows to score exactly: every allowed row when they are few or the brain has
        no index, else the graph's candidates plus the allowed rows it does not cover yet."""
        if np.count_nonzero(allowed) <= self.exact_max_rows or live < self._maintenance.ann_min_rows:
            return np.flatnonzero(allowed)
        ann = self._maintenance.ann(brain_id, epoch)
        if ann is None:
            return np.flatnonzero(allowed)
        indexed = ann.indexed_rows  # read first: rows indexed meanwhile are merely found twice
        try:
            found, exact = ann.search(vector, allowed, pool, self.exact_max_rows)
        except AnnShrunk:
            self._maintenance.lost(brain_id, epoch)
            return np.flatnonzero(allowed)
        tail = np.flatnonzero(allowed[indexed:]) + indexed
        return np.unique(np.concatenate([found, exact, tail]))

    def _known(self, conn: sqlite3.Connection, brain_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        states = {brain_id: schema.brain_state(conn, brain_id) for brain_id in dict.fromkeys(brain_ids)}
        for brain_id, state in states.items():
            if state is None and brain_id in self._rows:  # dropped, maybe by another process
                self._forget(brain_id)
        return {brain_id: state for brain_id, state in states.items() if state is not None}
