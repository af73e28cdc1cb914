"""Hybrid search over a brain: query handling, the index's fused legs, and hit shaping."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final, Literal

from cairn.domain.errors import InvalidInput
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain, Document, MetadataValue
from cairn.domain.paths import both_prefixes, scope_prefix
from cairn.domain.text import query_read
from cairn.ports.chunks import ChunkFilter, ChunkHit, ChunkIndex, ChunkQuery
from cairn.ports.embedder import Embedder
from cairn.ports.reranker import Reranker, RerankError
from cairn.services.repositories import DocumentRepository
from cairn.services.search.access import AccessLog
from cairn.services.search.as_of import DEEPEST, AsOf, one_per_line
from cairn.services.search.highlights import highlights
from cairn.services.search.identifiers import asked
from cairn.services.search.query_language import Reading, plain, read, without_excluded
from cairn.services.search.relevance import (
    EMBEDDED,
    GOOD_MATCH,
    Calibration,
    blend,
    judge,
    stored_vectors,
)
from cairn.services.search.restatements import Said, restated_first

SortMode = Literal["relevance", "recency", "relevance_then_recency"]
"""Checked at the edge (the REST body, the MCP arguments); the service trusts its type."""
RERANK_POOL: Final = 30  # documents a re-ranker orders for a search (at least top_k)
NEAREST: Final = 5
"""The vector leg's first hits the blend always sees (ChunkQuery.nearest). The fusion's first
candidates are mostly the keyword leg's: a hit only the vector leg finds scores under the keyword
leg's 50th, so where many hits share a word (a name in every turn of a conversation) the nearest
never reached the blend (LoCoMo dev recall@10 0.785 -> 0.795 with them; docs/RELEVANCE.md)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchTuning:
    candidate_pool: int = 100
    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 0.4
    calibration: Calibration = EMBEDDED  # the embedding model's cosine to relevance (relevance.py)


@dataclass(frozen=True)
class SearchHit:
    score: float
    path: str
    content: str
    chunk_id: str
    document_id: str
    brain_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, MetadataValue] = field(default_factory=dict)
    component_scores: dict[str, float | int | None] = field(default_factory=dict)
    highlights: list[str] = field(default_factory=list)  # highlights.py


@dataclass(frozen=True)
class SearchResult:
    query: str
    brain_id: str
    hits: list[SearchHit]
    took_ms: float


class SearchService:
    def __init__(
        self,
        chunks: ChunkIndex,
        embedder: Embedder,
        docs: DocumentRepository,
        tuning: SearchTuning | None = None,
        access: AccessLog | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        """`reranker`: when one is configured, it orders the hits of a search by relevance
        (`_reranked`)."""
        self.chunks = chunks
        self.embedder = embedder
        self.docs = docs
        self.tuning = tuning or SearchTuning()
        self.access = access
        self.reranker = reranker

    def search(
        self,
        brain: Brain,
        query: str,
        *,
        top_k: int = 10,
        scope: str | None = None,
        sort: SortMode = "relevance",
        tags: Sequence[str] = (),
        path_prefix: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        count_access: bool = True,
        as_of: AsOf | None = None,
        language: bool = True,
    ) -> SearchResult:
        """Hybrid search; the documents returned as good matches (relevance at least GOOD_MATCH)
        count as read unless `count_access` is off (internal lookups: dedupe, session recall's
        intermediate legs). A weak hit handed back is not a read: every surface counts reads by
        this one rule, so no surface's searches lift what another surface ranks by reads.
        Typed memories that are no longer current (superseded, or soft-forgotten) are left out:
        history is asked for where a surface has a way to (zengram's `include_superseded` and
        `at_time`, ThoughtMCP's `minStrength: 0`, REST search's `valid_at` and `known_at`: `as_of`),
        never handed to a plain search. A query in the Jeffs Brain query language (quotes, AND / OR
        / NOT, `kube*`) is read as its expression unless `language` is off (a lookup by a text
        that is no one's query: query_language.py)."""
        started = time.perf_counter()
        if not query or js_blank(query):
            raise InvalidInput("query must not be empty")
        asked_for, query = query, query_read(query)
        reading = read(query) if language else plain(query)
        within = both_prefixes(scope_prefix(scope), path_prefix)
        if within is None:  # a scope and a folder outside it: nothing is in both
            return SearchResult(query=asked_for, brain_id=brain.id, hits=[], took_ms=0.0)
        prefixes = (within,) if within else ()
        as_of = as_of or AsOf()
        flt = as_of.narrowed(
            ChunkFilter(
                brain_ids=(brain.id,),
                path_prefixes=prefixes,
                tags=tuple(tags),
                created_from=created_from,
                created_to=created_to,
                current_only=True,
            )
        )
        wanted = top_k if sort == "relevance" else max(top_k * 5, 50)
        rerank = self.reranker is not None and sort == "relevance"
        wanted = max(wanted, RERANK_POOL) if rerank else wanted
        read_docs: dict[tuple[str, str], Document] = {}
        if as_of.travels:
            hits, read_docs = self._retrieve_as_of(reading, flt, wanted, as_of)
        else:
            hits = self._retrieve(reading, flt, wanted)
        if rerank:
            hits = self._reranked(reading.text, hits)
        scale = _scale(hits)
        if sort != "relevance" and not as_of.travels:  # recency is when each was last written
            read_docs = self.docs.get_many([(r.hit.chunk.brain_id, r.hit.chunk.path) for r in hits])
        ordered = _order(hits, sort, _written(read_docs))[:top_k]
        scores = [round(r.basis * scale, 6) for r in ordered]
        if sort == "relevance":
            ordered = self._restated_first(ordered)
        where = [(r.hit.chunk.brain_id, r.hit.chunk.path) for r in ordered]
        docs = read_docs or self.docs.get_many(where)  # one batch read
        shaped = [
            _shape(r, docs.get((r.hit.chunk.brain_id, r.hit.chunk.path)), score, reading.text)
            for r, score in zip(ordered, scores, strict=True)
        ]
        if count_access:
            good = [h.document_id for r, h in zip(ordered, shaped, strict=True) if r.relevance >= GOOD_MATCH]
            self.note_access(brain.id, good)
        took = (time.perf_counter() - started) * 1000
        return SearchResult(query=asked_for, brain_id=brain.id, hits=shaped, took_ms=round(took, 3))

    def passages(self, query: str, flt: ChunkFilter, top_k: int) -> list[tuple[ChunkHit, float]]:
        """The `top_k` best chunks (several may share a document) in memory_search's order, the
        blend of both legs with newer restatements first, each with its score on memory_search's
        scale (the first scores its calibrated relevance, the others in proportion to their blend):
        what a grounded answer reads."""
        reading = read(query_read(query))
        vector = self.embedder.embed([reading.text])[0].tolist()
        pool = max(self.tuning.candidate_pool, top_k * 3)
        first = (
            pool if asked(reading.text).words else min(top_k * 3, pool)
        )  # as _retrieve, for the same reason
        hits = self.chunks_for(reading, flt, first, vector=vector, pool=pool, nearest=NEAREST)
        ranked = self._rank(hits, vector, reading.text)[:top_k]
        scale = _scale(ranked)
        scores = [round(r.basis * scale, 6) for r in ranked]
        return list(zip([r.hit for r in self._restated_first(ranked)], scores, strict=True))

    def note_access(self, brain_id: str, document_ids: Sequence[str]) -> None:
        """Record that these documents were handed back to a caller (services/search/access.py)."""
        if self.access is not None and document_ids:
            self.access.saw(brain_id, document_ids)

    def _retrieve(self, reading: Reading, flt: ChunkFilter, top_k: int) -> list[Ranked]:
        """The best chunk of each of the top `top_k` documents, by the blend of both legs
        (relevance.py). The legs' fusion ranks their whole pools, so its first hits are a prefix
        of its full list: the blend orders the first 5 chunks a document (loading a chunk costs
        ~40 µs), and the whole pool only when that prefix held too few documents, widened by the
        index from the legs it already ran (ChunkQuery.documents; a second search for the wider
        head was 21 % of queries at 100,000 chunks and most of their p95). A query that names an
        identifier has the whole pool blended: the note naming it is lifted from wherever the
        fusion put it (audit lists of ids led a bare id's fusion, its note past the first 15)."""
        pool = max(self.tuning.candidate_pool, top_k * 3)
        first = pool if asked(reading.text).words else min(top_k * 5, pool)
        vector = self.embedder.embed([reading.text])[0].tolist()
        hits = self.chunks_for(
            reading, flt, first, vector=vector, pool=pool, nearest=NEAREST, documents=top_k
        )
        return _best_chunk_per_document(self._rank(hits, vector, reading.text))[:top_k]

    def _retrieve_as_of(
        self, reading: Reading, flt: ChunkFilter, top_k: int, as_of: AsOf
    ) -> tuple[list[Ranked], dict[tuple[str, str], Document]]:
        """`_retrieve` for a search back in time: the documents' records judge what the index
        cannot (as_of.py), looking deeper while too few of the hits pass, and one value a fact key
        or status subject stays at `valid_at`. With the hits, the records read to judge them, by
        each hit's (brain, path), so shaping them reads nothing again."""
        vector = self.embedder.embed([reading.text])[0].tolist()
        pool = max(self.tuning.candidate_pool, top_k * 3)
        while True:
            hits = self.chunks_for(reading, flt, pool, vector=vector, pool=pool, nearest=NEAREST)
            ranked = _best_chunk_per_document(self._rank(hits, vector, reading.text))
            docs = self.docs.get_many_by_id(r.hit.chunk.document_id for r in ranked)
            held = {
                doc_id: as_of.as_held(doc)
                for doc_id, doc in docs.items()
                if doc.deleted_at is None and doc.brain_id in flt.brain_ids and as_of.holds(doc)
            }
            if len(held) >= top_k or len(hits) < pool or pool >= DEEPEST:
                break
            pool *= 4
        if as_of.valid_at is not None:
            held = one_per_line(held)
        kept = [r for r in ranked if r.hit.chunk.document_id in held][:top_k]
        held = as_of.links_as_held({r.hit.chunk.document_id: held[r.hit.chunk.document_id] for r in kept},
                                   self.docs.get_many_by_id)  # fmt: skip
        return kept, {(r.hit.chunk.brain_id, r.hit.chunk.path): held[r.hit.chunk.document_id] for r in kept}

    def _restated_first(self, ranked: list[Ranked]) -> list[Ranked]:
        """`ranked` with each newer restatement of a hit moved above it (restatements.py); the
        caller keeps the scores with the places, so they still fall down the list."""
        said = [Said(r.hit.chunk.id, r.hit.chunk.created_at, r.similarity, r.hit.chunk.text) for r in ranked]
        chunk_of = {r.hit.chunk.id: r.hit.chunk for r in ranked}
        order = restated_first(said, lambda ids: stored_vectors(self.chunks, (chunk_of[i] for i in ids)))
        return [ranked[i] for i in order]

    def _reranked(self, query: str, ranked: list[Ranked]) -> list[Ranked]:
        """The hits in the re-ranker's order, each scored by its re-ranker score scaled between the
        lowest and highest of the call (its scale is the model's), in place of the blend; those it
        left out below them. If it fails, the blend's order stands (logged, never quoted)."""
        assert self.reranker is not None
        if not ranked:
            return ranked
        try:
            order = self.reranker.rerank(query, [r.hit.chunk.text for r in ranked])
        except RerankError as exc:
            log.warning("re-ranking failed (%s: %s); the blend's order stands", exc.code, exc.message)
            return ranked
        scores: dict[int, float] = {}
        for result in order:
            if 0 <= result.index < len(ranked) and result.index not in scores:
                scores[result.index] = result.score
        if not scores:
            return ranked
        low, high = min(scores.values()), max(scores.values())
        out = [
            replace(ranked[i], rerank=score, weight=(score - low) / (high - low) if high > low else 1.0)
            for i, score in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return out + [replace(r, weight=0.0) for i, r in enumerate(ranked) if i not in scores]

    def _rank(self, hits: Sequence[ChunkHit], vector: Sequence[float], query: str) -> list[Ranked]:
        judged = judge(self.chunks, hits, vector, self.tuning.calibration)
        ranked = [
            Ranked(j.hit, j.relevance, b, similarity=j.similarity)
            for j, b in zip(judged, blend(judged, asked(query)), strict=True)
        ]
        ranked.sort(key=lambda r: -r.blend)  # stable: the legs' fusion breaks ties
        return ranked

    def chunks_for(
        self,
        query: str | Reading,
        flt: ChunkFilter,
        top_k: int,
        *,
        vector: list[float] | None = None,
        pool: int | None = None,
        nearest: int = 0,
        documents: int = 0,
    ) -> list[ChunkHit]:
        """Fused chunk hits for `query` (several may share a document), best first, then the
        vector leg's first `nearest` hits the fusion left out; each leg ranks `pool` candidates
        (default the tuning's, at least `top_k`). With `documents`, `top_k` hits holding fewer
        documents are widened to `pool` (ChunkQuery.documents). A Reading in the query language
        (query_language.py) narrows the keyword leg, and with a NOT the hits are the whole pool but
        what it excludes; a text is read as a plain question (zengram's search, whose protocol has
        no query language)."""
        t = self.tuning
        reading = query if isinstance(query, Reading) else plain(query_read(query))
        if vector is None:
            vector = self.embedder.embed([reading.text])[0].tolist()
        pool = max(pool or t.candidate_pool, top_k)
        hits = self.chunks.search(
            ChunkQuery(
                text=reading.keyword,
                boolean=reading.boolean,
                vector=vector,
                filter=flt,
                top_k=pool if reading.excluded is not None else top_k,
                candidate_pool=pool,
                rrf_k=t.rrf_k,
                bm25_weight=t.bm25_weight,
                vector_weight=t.vector_weight,
                nearest=nearest,
                documents=documents,
            )
        )
        return without_excluded(self.chunks, reading.excluded, flt, hits)


@dataclass(frozen=True)
class Ranked:
    """A chunk hit with its calibrated relevance and its blend (what orders it); when a re-ranker
    ordered the hits, its score and `weight`, what then scores the hit in place of the blend."""

    hit: ChunkHit
    relevance: float
    blend: float
    rerank: float | None = None
    weight: float | None = None
    similarity: float = 0.0  # the query's cosine with the chunk

    @property
    def basis(self) -> float:
        """What the hit's score is proportional to."""
        return self.weight if self.weight is not None else self.blend


def _best_chunk_per_document(ranked: Sequence[Ranked]) -> list[Ranked]:
    seen: set[str] = set()
    out: list[Ranked] = []
    for r in ranked:
        if r.hit.chunk.document_id not in seen:
            seen.add(r.hit.chunk.document_id)
            out.append(r)
    return out


def _written(docs: dict[tuple[str, str], Document]) -> Callable[[Ranked], datetime]:
    """When a hit's document was last written (its record's `updated_at`), else its chunk's time."""

    def when(r: Ranked) -> datetime:
        doc = docs.get((r.hit.chunk.brain_id, r.hit.chunk.path))
        return (
            doc.updated_at
            if doc is not None and doc.id == r.hit.chunk.document_id
            else r.hit.chunk.created_at
        )

    return when


def _order(ranked: list[Ranked], sort: SortMode, written: Callable[[Ranked], datetime]) -> list[Ranked]:
    """relevance: the blend of both legs. recency: the latest written matching first.
    relevance_then_recency: the blend rounded to 3 significant digits, ties broken by recency."""
    if sort == "recency":
        return sorted(ranked, key=written, reverse=True)
    if sort == "relevance_then_recency":
        return sorted(ranked, key=lambda r: (float(f"{r.blend:.3g}"), written(r)), reverse=True)
    if sort == "relevance":
        return ranked
    raise InvalidInput(f"unknown sort {sort!r}")  # the edges' types never let one through


def _scale(ranked: Sequence[Ranked]) -> float:
    """What turns a blend into a score: the best hit's relevance over the best blend, so the top
    hit scores how well the best match answers (comparable across queries) and the others in
    proportion to their blend (the scores fall with the order)."""
    top = max((r.basis for r in ranked), default=0.0)
    return max((r.relevance for r in ranked), default=0.0) / top if top > 0 else 0.0


def _shape(ranked: Ranked, doc: Document | None, score: float, query: str) -> SearchHit:
    """A hit from its chunk and the document now at the chunk's path (None: gone since indexing),
    scored `score` (its place's)."""
    hit = ranked.hit
    chunk = hit.chunk
    return SearchHit(
        score=score,
        path=chunk.path,
        content=chunk.text,
        chunk_id=chunk.id,
        document_id=chunk.document_id,
        brain_id=chunk.brain_id,
        title=doc.title if doc else chunk.title,
        created_at=chunk.created_at,
        updated_at=doc.updated_at if doc else chunk.created_at,
        metadata=dict(doc.metadata) if doc else {},
        component_scores={
            "bm25_rank": hit.bm25_rank,
            "vector_rank": hit.vector_rank,
            "bm25": hit.bm25_score,
            "vector": hit.vector_similarity,
            "blend": round(ranked.blend, 6),
            "relevance": round(ranked.relevance, 6),
            **({"rerank": round(ranked.rerank, 6)} if ranked.rerank is not None else {}),
        },
        highlights=highlights(query, chunk.text),
    )
