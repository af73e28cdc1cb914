"""In-memory ChunkIndex with the embedded index's semantics, for service unit tests.

BM25 (k1 1.2, b 0.75, FTS5's IDF) over the folded words of title, tags (`tag_words`), text and
context, per brain, without stemming (a boolean query keeps the chunks `boolean_query.matches`
accepts, ranked by its positive terms and the words its prefixes find); cosine similarity for
vectors; both legs filtered before their pools are cut (validity at millisecond resolution, as the
adapters compare it); the same weighted RRF as the SQLite adapter.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from cairn.adapters.local.chunk_schema import epoch_ms
from cairn.adapters.local.fts_boolean import leg_terms
from cairn.adapters.local.fts_query import words
from cairn.adapters.local.rrf import Leg, fused_head
from cairn.adapters.local.vector_store import unit_rows
from cairn.domain.boolean_query import BoolQuery, matches, positive_prefixes
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Chunk
from cairn.domain.text import tag_words
from cairn.ports.chunks import ChunkFilter, ChunkHit, ChunkQuery, widened
from cairn.ports.embedder import Vectors

K1, B = 1.2, 0.75


@dataclass
class _Stored:
    chunk: Chunk
    vector: npt.NDArray[np.float32]
    terms: Counter[str]
    length: int
    seq: int  # insertion order, the tie-break inside a leg (like SQLite's rowid)


class MemoryChunkIndex:
    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.items: dict[str, _Stored] = {}
        self._seq = 0
        self._lock = threading.Lock()

    def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        matrix = unit_rows(vectors) if len(chunks) else np.zeros((0, self.dimension), np.float32)
        if matrix.shape != (len(chunks), self.dimension) or not np.isfinite(matrix).all():
            raise InvalidInput(f"expected {len(chunks)} finite vectors of dimension {self.dimension}")
        with self._lock:
            for chunk, vector in zip(chunks, matrix, strict=True):
                tokens = words(_keyword_text(chunk))
                self._seq += 1
                self.items.pop(chunk.id, None)
                self.items[chunk.id] = _Stored(chunk, vector, Counter(tokens), len(tokens), self._seq)

    def set_context(self, brain_id: str, document_id: str, context: str) -> None:
        with self._lock:
            for item in list(self.items.values()):
                c = item.chunk
                if c.brain_id == brain_id and c.document_id == document_id and c.ordinal == 0:
                    chunk = c.model_copy(update={"context": context})
                    tokens = words(_keyword_text(chunk))
                    self.items[c.id] = _Stored(chunk, item.vector, Counter(tokens), len(tokens), item.seq)

    def delete_document(self, brain_id: str, document_id: str) -> int:
        with self._lock:
            doomed = [
                key
                for key, item in self.items.items()
                if item.chunk.brain_id == brain_id and item.chunk.document_id == document_id
            ]
            for key in doomed:
                del self.items[key]
        return len(doomed)

    def activate(self, brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> None:
        live = set(chunk_ids)
        with self._lock:
            for key, item in list(self.items.items()):
                c = item.chunk
                if c.brain_id != brain_id or c.document_id != document_id:
                    continue
                if key not in live:
                    del self.items[key]
                elif not c.active:
                    item.chunk = c.model_copy(update={"active": True})

    def delete_chunks(self, brain_id: str, chunk_ids: Sequence[str]) -> int:
        with self._lock:
            doomed = [key for key in dict.fromkeys(chunk_ids) if key in self.items]
            doomed = [key for key in doomed if self.items[key].chunk.brain_id == brain_id]
            for key in doomed:
                del self.items[key]
        return len(doomed)

    def drop_brain(self, brain_id: str) -> int:
        with self._lock:
            doomed = [key for key, item in self.items.items() if item.chunk.brain_id == brain_id]
            for key in doomed:
                del self.items[key]
        return len(doomed)

    def get_chunks(self, brain_id: str, document_id: str) -> list[Chunk]:
        found = [
            item.chunk
            for item in list(self.items.values())
            if item.chunk.brain_id == brain_id and item.chunk.document_id == document_id
        ]
        return sorted(found, key=lambda c: (c.ordinal, c.id))

    def get_chunk(self, brain_id: str, chunk_id: str) -> Chunk | None:
        item = self.items.get(chunk_id)
        return item.chunk if item is not None and item.chunk.brain_id == brain_id else None

    def get_many(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        found = {key: self.get_chunk(brain_id, key) for key in chunk_ids}
        return {key: chunk for key, chunk in found.items() if chunk is not None}

    def fingerprints(self, brain_id: str, document_id: str) -> dict[str, str]:
        return {
            item.chunk.id: item.chunk.fingerprint
            for item in list(self.items.values())
            if item.chunk.brain_id == brain_id and item.chunk.document_id == document_id
        }

    def get_vectors(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Vectors]:
        found = {key: self.items.get(key) for key in chunk_ids}
        return {
            key: item.vector.copy()
            for key, item in found.items()
            if item is not None and item.chunk.brain_id == brain_id
        }

    def held(self, brain_id: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for item in list(self.items.values()):
            if item.chunk.brain_id == brain_id and item.chunk.active:
                found[item.chunk.document_id] = found.get(item.chunk.document_id, 0) + 1
        return found

    def count(self, brain_id: str) -> int:
        return sum(1 for item in list(self.items.values()) if item.chunk.brain_id == brain_id)

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        hits = self._answer(query)
        wider = widened(query, hits)
        return hits if wider is None else self._answer(wider)

    def _answer(self, query: ChunkQuery) -> list[ChunkHit]:
        if query.rrf_k < 0 or query.bm25_weight < 0 or query.vector_weight < 0:
            raise InvalidInput("rrf_k and the leg weights must not be negative")
        vector = None
        if query.vector is not None and query.vector_weight > 0:
            array = np.asarray(query.vector, dtype=np.float32)
            if array.shape != (self.dimension,) or not np.isfinite(array).all():
                raise InvalidInput(f"query vector must be {self.dimension} finite floats")
            vector = unit_rows(array)[0]
        if query.top_k <= 0:
            return []
        pool = max(query.candidate_pool, query.top_k)
        items = list(self.items.values())
        passing = [item for item in items if _passes(item.chunk, query.filter)]
        boolean = query.boolean
        terms = leg_terms(query)
        texts = passing if boolean is None else [i for i in passing if _satisfies(boolean, i.chunk)]
        if boolean is not None and (stems := tuple(positive_prefixes(boolean))) and terms:
            terms = list(
                dict.fromkeys([*terms, *sorted(w for i in texts for w in i.terms if w.startswith(stems))])
            )
        bm25 = _bm25(items, texts, terms, pool) if terms else {}
        similar = _cosine(passing, vector, pool) if vector is not None else {}
        fused = fused_head(
            [Leg(list(bm25), query.bm25_weight), Leg(list(similar), query.vector_weight)],
            query.rrf_k,
            query.top_k,
            query.nearest,
        )
        by_id = {item.chunk.id: item.chunk for item in items}
        return [
            ChunkHit(
                chunk=by_id[f.id],
                score=f.score,
                bm25_rank=f.ranks[0],
                vector_rank=f.ranks[1],
                bm25_score=bm25.get(f.id),
                vector_similarity=similar.get(f.id),
            )
            for f in fused
        ]


def _passes(chunk: Chunk, f: ChunkFilter) -> bool:
    created = chunk.created_at
    return (
        chunk.brain_id in f.brain_ids
        and (chunk.active or not f.active_only)
        and (chunk.current or not f.current_only)
        and (not f.path_prefixes or any(chunk.path.startswith(p) for p in f.path_prefixes))
        and all(tag in chunk.tags for tag in f.tags)
        and all(any(tag in chunk.tags for tag in group) for group in f.any_tags)
        and (f.created_from is None or created >= f.created_from)
        and (f.created_to is None or created < f.created_to)
        and (not f.document_ids or chunk.document_id in f.document_ids)
        and all(chunk.facets.get(name) in values for name, values in f.facets)
        and (
            f.importance_min is None
            or (chunk.importance is not None and chunk.importance >= f.importance_min)
        )
        and (f.valid_at is None or _valid_at(chunk, f.valid_at))
        and all(_owner_passes(chunk, subject) for brain_id, subject in f.owners if brain_id == chunk.brain_id)
    )


def _owner_passes(chunk: Chunk, subject: str | None) -> bool:
    owner = chunk.owner
    return owner is None or (subject is not None and (owner == subject or owner.startswith(f"{subject}:")))


def _satisfies(boolean: BoolQuery, chunk: Chunk) -> bool:
    """The boolean query holds on the chunk's fields (a phrase within one of them)."""
    return matches(boolean, chunk.title, tag_words(chunk.tags), chunk.text, chunk.context)


def _keyword_text(chunk: Chunk) -> str:
    return f"{chunk.title} {tag_words(chunk.tags)} {chunk.text} {chunk.context}"


def _valid_at(chunk: Chunk, moment: datetime) -> bool:
    """At millisecond resolution, as the adapters compare dates."""
    at = epoch_ms(moment)
    return (chunk.valid_from is None or epoch_ms(chunk.valid_from) <= at) and (
        chunk.valid_to is None or epoch_ms(chunk.valid_to) > at
    )


def _bm25(items: list[_Stored], passing: list[_Stored], terms: list[str], pool: int) -> dict[str, float]:
    """BM25 of the passing chunks; statistics per brain over all its chunks, as FTS5 keeps them."""
    stats: dict[str, tuple[int, float, Counter[str]]] = {}
    for brain_id in {item.chunk.brain_id for item in passing}:
        brain = [item for item in items if item.chunk.brain_id == brain_id]
        df: Counter[str] = Counter()
        for item in brain:
            df.update(set(item.terms) & set(terms))
        stats[brain_id] = (len(brain), sum(i.length for i in brain) / len(brain), df)
    scored: list[tuple[float, int, str]] = []
    for item in passing:
        total, avg_length, df = stats[item.chunk.brain_id]
        score = 0.0
        matched = False
        for term in terms:
            tf = item.terms.get(term, 0)
            if tf:
                matched = True
                idf = math.log((total - df[term] + 0.5) / (df[term] + 0.5))
                norm = tf + K1 * (1 - B + B * item.length / max(avg_length, 1e-9))
                score += max(idf, 1e-6) * tf * (K1 + 1) / norm
        if matched:
            scored.append((-score, item.seq, item.chunk.id))
    scored.sort()
    return {chunk_id: -neg for neg, _seq, chunk_id in scored[:pool]}


def _cosine(passing: list[_Stored], vector: npt.NDArray[np.float32], pool: int) -> dict[str, float]:
    scored = sorted((-float(item.vector @ vector), item.seq, item.chunk.id) for item in passing)
    return {chunk_id: -neg for neg, _seq, chunk_id in scored[:pool]}
