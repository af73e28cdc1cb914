"""Recall (composite score: similarity, salience, recency, link weight, strength), reinforcing
what it returns, and boolean full-text search over a user's memories."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from cairn.domain.boolean_query import And, BoolQuery, Term, positive_terms
from cairn.domain.errors import Conflict
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain
from cairn.domain.text import query_read
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.documents.indexing import owner_token
from cairn.services.documents.unreadable import read_or_skip
from cairn.services.thoughtmcp import thought_scoring as ts
from cairn.services.thoughtmcp.checks import check_filters, check_user
from cairn.services.thoughtmcp.models import (
    DEFAULT_MIN_SIMILARITY,
    DEFAULT_MIN_STRENGTH,
    MAX_LIMIT,
    POOL,
    SECTOR_POOL,
    Filters,
    Recalled,
    Row,
    bytes_content,
    to_ms,
    user_folder,
)
from cairn.services.thoughtmcp.sectors import SEMANTIC, VIEWS
from cairn.services.thoughtmcp.waypoints import ThoughtLinks

WRITE_SPAN: Final = timedelta(minutes=15)
"""Longer than a remember runs (a Lambda's hard limit): how much later than a memory's createdAt
(its row's) its chunks' creation time (its document's, taken once the sector embeddings are made)
may be. The index's bound on dateRange.end is widened by it; `_filtered` applies the exact one."""


class ThoughtRecall(ThoughtLinks):
    """The reads of ThoughtMemories."""

    def recall(
        self,
        brain: Brain,
        user_id: str,
        *,
        text: str | None,
        filters: Filters,
        limit: int = 10,
        offset: int = 0,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        reinforce: bool = True,
    ) -> tuple[list[Recalled], int]:
        """The user's memories by composite score, best first: the page and the count of matches."""
        check_user(user_id, brain)
        check_filters(filters)
        limit = max(1, min(limit, MAX_LIMIT))
        offset = max(0, offset)
        now = self.clock.now()
        if text is not None and not js_blank(text):
            similarities = self._similar(brain, user_id, query_read(text), filters)
            close = {d: s for d, s in similarities.items() if s >= min_similarity}
            if close:
                rows = self._filtered(self._rows_of(brain.id, user_id, close), filters, now)
                found = [self._recalled(r, close[r.id], now) for r in rows]
            else:
                # ThoughtMCP: no memory close enough, every memory passes. There each passes at
                # similarity 0, ranked by salience; here at its own similarity, so the closest
                # comes first and a similarity under minSimilarity says it is a weak match.
                rows = self._filtered(self._all_rows(brain.id, user_id), filters, now)
                found = [self._recalled(r, similarities.get(r.id, 0.0), now) for r in rows]
        else:
            found = [
                self._recalled(r, None, now)
                for r in self._filtered(self._all_rows(brain.id, user_id), filters, now)
            ]
        found.sort(key=lambda f: (-f.score.total, f.row.id))
        page = found[offset : offset + limit]
        page = self._with_content(brain, page)
        if reinforce:
            self._reinforce(brain, [f.row for f in page], now)
        return page, len(found)

    def _similar(self, brain: Brain, user_id: str, text: str, filters: Filters) -> dict[str, float]:
        """Memory id -> its best similarity to `text` over the sector embeddings searched (all five
        unless `sectors` names some), calibrated: minSimilarity means on the embedded model what
        it means on ThoughtMCP's. The memories nearest by their text (POOL of them)."""
        vector = self.embedder.embed([text])[0]
        hits = self.chunks.search(
            ChunkQuery(
                "",
                vector.tolist(),
                self._chunk_filter(brain, user_id, filters),
                top_k=POOL,
                candidate_pool=POOL,
                bm25_weight=0.0,
            )
        )
        semantic: dict[str, float] = {}
        for hit in hits:  # a long memory has several chunks: its best one
            if hit.vector_similarity is not None:
                doc_id = hit.chunk.document_id
                semantic[doc_id] = max(semantic.get(doc_id, -1.0), hit.vector_similarity)
        sectors = set(filters.sectors or ts.SECTORS)
        cosines = {doc_id: ([cos] if SEMANTIC in sectors else []) for doc_id, cos in semantic.items()}
        views = [s for s in VIEWS if s in sectors]
        if views:
            # The other sectors are scored for the memories nearest by their text: a memory's
            # sector views are its text set in a frame, so they stay near it (docs/THOUGHTMCP.md).
            nearest = sorted(semantic, key=lambda d: -semantic[d])[:SECTOR_POOL]
            stored = self.sectors.get(brain.id, user_id, nearest)
            for doc_id in nearest:
                mine = stored.get(doc_id)
                if mine is None:  # stored before sector embeddings, or by another model
                    cosines[doc_id] = [semantic[doc_id]]
                    continue
                cosines[doc_id].extend(float(mine[s] @ vector) for s in views)
        return {doc_id: self.calibration(max(values)) for doc_id, values in cosines.items() if values}

    def _chunk_filter(self, brain: Brain, user_id: str, filters: Filters) -> ChunkFilter:
        facets: list[tuple[str, tuple[str, ...]]] = [("user_id", (user_id,))]
        # `sectors` chooses which of a memory's sector embeddings are searched (_similar), it filters
        # nothing (ThoughtMCP); primarySector filters.
        if filters.primary_sector is not None:
            facets.append(("sector", (filters.primary_sector,)))
        if filters.category is not None:
            facets.append(("category", (filters.category,)))
        groups = tuple(
            group
            for group in (
                tuple(f"kw:{k}" for k in filters.keywords),
                tuple(f"tag:{t}" for t in filters.tags),
            )
            if group
        )
        hidden = (filters.min_strength if filters.min_strength is not None else DEFAULT_MIN_STRENGTH) > 0
        return ChunkFilter(
            brain_ids=(brain.id,),
            path_prefixes=(user_folder(user_id),),
            facets=tuple(facets),
            any_tags=groups,
            importance_min=filters.min_salience,
            created_from=to_ms(filters.date_from)
            if filters.date_from is not None
            else None,  # chunks: never older than their row
            created_to=filters.date_to + WRITE_SPAN if filters.date_to is not None else None,
            current_only=hidden,  # a soft-forgotten memory is hidden unless minStrength is 0
        )

    def _filtered(self, rows: Iterable[Row], f: Filters, now: datetime) -> list[Row]:
        """The rows every filter admits (the index already applied them to candidates it found;
        rows read from the user's partition are filtered here), strength decayed to now."""
        min_strength = f.min_strength if f.min_strength is not None else DEFAULT_MIN_STRENGTH
        out = []
        for r in rows:
            if f.primary_sector is not None and r.sector != f.primary_sector:
                continue
            if ts.decayed(r.strength, r.sector, r.last_access, now) < min_strength:
                continue
            if f.min_salience is not None and r.salience < f.min_salience:
                continue
            if f.date_from is not None and to_ms(r.created_at) < to_ms(f.date_from):
                continue
            if f.date_to is not None and to_ms(r.created_at) > to_ms(f.date_to):  # inclusive, as ThoughtMCP's
                continue
            if f.keywords and not {k.lower() for k in f.keywords} & {k.lower() for k in r.keywords}:
                continue
            if f.tags and not {t.lower() for t in f.tags} & {t.lower() for t in r.tags}:
                continue
            if f.category is not None and r.category != f.category:
                continue
            out.append(r)
        return out

    def _recalled(self, row: Row, similarity: float | None, now: datetime) -> Recalled:
        strength = ts.decayed(row.strength, row.sector, row.last_access, now)
        score = ts.composite(similarity, row.salience, ts.recency(row.created_at, now), row.link_weight)
        return Recalled(row, row.content or "", strength, score)

    def _with_content(self, brain: Brain, page: list[Recalled]) -> list[Recalled]:
        """The page with each long memory's text read from the blob store; one whose stored
        content is damaged is left out (services/documents/unreadable.py)."""
        out = []
        for found in page:
            if found.row.content is None:  # a long memory: its text is in the blob store only
                text = read_or_skip(
                    found.row, lambda row: bytes_content(self.documents.read(brain, row.path))
                )
                if text is None:
                    continue
                found = Recalled(found.row, text, found.strength, found.score)
            out.append(found)
        return out

    def _reinforce(self, brain: Brain, rows: Sequence[Row], now: datetime) -> None:
        """Each memory read is reinforced: decayed to now, then strengthened; last access now."""
        if not rows:
            return
        user = rows[0].user_id
        current = self._rows(brain.id, user, [r.id for r in rows])  # one batch read
        for row in rows:
            fresh = current.get(row.id)
            for _ in range(4):
                if fresh is None:
                    break
                decayed = ts.decayed(fresh.strength, fresh.sector, fresh.last_access, now)
                fresh.strength = ts.reinforced(decayed, fresh.reinforced_at, now)
                fresh.reinforced_at = now if fresh.strength > 0 else fresh.reinforced_at
                fresh.last_access = now
                fresh.access_count += 1
                try:
                    self.rows.put(brain.id, fresh, fresh.version)
                    break
                except Conflict:
                    fresh = self._rows(brain.id, user, [row.id]).get(row.id)  # moved meanwhile: again
        self._touched(brain.id, user, *(r.id for r in rows))

    def search(
        self,
        brain: Brain,
        user_id: str,
        query: BoolQuery,
        *,
        filters: Filters,
        limit: int = 10,
        offset: int = 0,
    ) -> tuple[list[tuple[Recalled, float]], int]:
        """Memories matching the boolean query (domain/boolean_query.py), by BM25 rank, with every
        filter inside the index leg; (memory, rank) pairs of the page and the count of matches."""
        check_user(user_id, brain)
        check_filters(filters)
        limit = max(1, min(limit, MAX_LIMIT))
        now = self.clock.now()
        hits = self.chunks.search(
            ChunkQuery(
                " ".join(positive_terms(query)),
                None,
                self._chunk_filter(brain, user_id, filters),
                top_k=POOL,
                candidate_pool=POOL,
                vector_weight=0.0,
                boolean=And((query, Term(owner_token(user_id)))),  # the user's rows, intersected
            )
        )
        ranks: dict[str, float] = {}
        for hit in hits:
            doc_id = hit.chunk.document_id
            ranks[doc_id] = max(ranks.get(doc_id, 0.0), hit.bm25_score or hit.score)
        rows = self._filtered(self._rows_of(brain.id, user_id, ranks), filters, now)
        found = sorted(
            ((self._recalled(r, None, now), ranks[r.id]) for r in rows), key=lambda p: (-p[1], p[0].row.id)
        )
        page = found[max(0, offset) : max(0, offset) + limit]
        contents = {f.row.id: f for f in self._with_content(brain, [f for f, _ in page])}  # damaged: left out
        return [(contents[f.row.id], rank) for f, rank in page if f.row.id in contents], len(found)

    def get_many(self, brain: Brain, user_id: str, memory_ids: Sequence[str]) -> dict[str, Recalled]:
        check_user(user_id, brain)
        now = self.clock.now()
        rows = self._rows(brain.id, user_id, list(memory_ids))
        found = self._with_content(brain, [self._recalled(r, None, now) for r in rows.values()])
        return {f.row.id: f for f in found}
