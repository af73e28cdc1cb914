"""Search over libraries: vector, full-text and concept-graph legs fused by RRF, then re-ranked.

1. The scope is decided before any leg runs: the caller's readable libraries, narrowed by
   workspace, library, type and collection (a collection is its folder, so a path-prefix filter).
2. The `vector` and `fulltext` legs are the ChunkIndex's two legs, each run on its own with the
   filters inside (live chunks of the scope only), so its order is its ranking. The `graph` leg
   reads the query's concepts' chunks (services/mnemosyne/concepts.py) and keeps those live in the scope.
3. Reciprocal rank fusion (k = 60) over the legs that ran, each leg weighted as the library
   type's profile says (full-text and vector; the graph leg GRAPH_WEIGHT), deduplicated by
   chunk; a candidate's `source` is the leg that ranked it best. Only each leg's first RRF_DEPTH
   hits are fused, and a full-text hit only when its BM25 is at least FULLTEXT_FLOOR of the
   query's best: on a small library every leg ranks nearly every chunk, and fused that deep, a
   chunk sharing one incidental word with the query outranked the one its meaning matched. When
   the vector leg ran, a full-text hit is also left out of the fusion when its cosine with the
   query is under FULLTEXT_MEANING of the vector leg's best: it shares the query's words but not
   what the query is about (a question on getting back online when the internet stops working
   matched a note on the school run by "work"). A share, not a fixed distance: a question asked
   in other words has a low best cosine, and a fixed distance under it let almost anything in.
   The other candidates follow, in the order of the sum over whole legs, scored 0
   (docs/RELEVANCE.md). Only chunks of completed items take part (a queued re-ingest's staged
   chunks are never live; its previous version stays searchable).
4. With a re-ranker configured and `rerank` asked for, the best RERANK_POOL candidates are
   re-ordered by it (with the library type's profile's instruction, when it has one); if it
   fails, the fused order stands and `reranker_used` says false. Scores are the re-ranker's
   when it ran. Else each RRF sum over the best one, times the calibrated relevance of the vector
   leg's best similarity (services/search/relevance.py): the order is the fusion's, and the top
   score says how well the best match answers, comparably across queries (an RRF sum does not:
   an unrelated query tops out at the same 0.0229 as one the library answers).
5. Image items are not candidates: with `include_images`, the image items among the fused
   results are returned as `images`, found through their text (metadata, alt text, captions).
   Each is judged on its own: its score is the calibrated relevance of its own similarity to the
   query (0 to 1, comparable across queries), and it is kept only when that reaches IMAGE_FLOOR or
   a lexical leg (full-text, graph) found it. The vector leg ranks every image of a small library
   for any query, so without this an unrelated query would always return the nearest image.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from cairn.domain.models import Chunk, Document
from cairn.ingest.profiles import profile_for
from cairn.ports.chunks import ChunkFilter, ChunkIndex, ChunkQuery
from cairn.ports.embedder import Embedder
from cairn.ports.reranker import Reranker, RerankError
from cairn.services.documents.service import DocumentService
from cairn.services.mnemosyne.concepts import ConceptGraph
from cairn.services.mnemosyne.libraries import Collection, Library, item_type_of
from cairn.services.search.damaged_brains import Unsearched, around_damage
from cairn.services.search.relevance import GOOD_MATCH, Calibration, cosines

SEARCH_TYPES: Final = ("vector", "fulltext", "graph")
RRF_K: Final = 60
GRAPH_WEIGHT: Final = 0.1
"""The graph leg's weight in the fused sum (LoCoMo dev as a journal library, recall@10 with the
graph leg at 1.0 / 0.5 / 0.25 / 0.1 / 0.05: .630 / .779 / .836 / .849 / .844; docs/PERFORMANCE.md)."""
POOL: Final = 100  # candidates per leg
RRF_DEPTH: Final = 20
FULLTEXT_FLOOR: Final = 0.7
FULLTEXT_MEANING: Final = 0.5
"""RRF_DEPTH, FULLTEXT_FLOOR and FULLTEXT_MEANING (a share of the vector leg's best cosine) were
chosen with bench/mnemosyne_fusion.py on the relevance fixtures, LoCoMo dev as a journal library
and the nine generated library-type corpora (docs/PERFORMANCE.md, "Mnemosyne fusion")."""
RERANK_POOL: Final = 50
PREVIEW_CHARS: Final = 500
MAX_LIMIT: Final = 200
IMAGE_FLOOR: Final = GOOD_MATCH
"""An image only the vector leg found is returned from this calibrated relevance up."""
LEXICAL_LEGS: Final = ("fulltext", "graph")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchRequest:
    query: str
    libraries: Sequence[Library]
    collection: Collection | None = None
    limit: int = 20
    search_types: Sequence[str] = SEARCH_TYPES
    rerank: bool = True
    include_images: bool = True


@dataclass
class Candidate:
    chunk: Chunk
    library: Library
    document: Document
    score: float
    source: str
    ranks: dict[str, int] = field(default_factory=dict)

    @property
    def preview(self) -> str:
        return preview(self.chunk.text)


@dataclass(frozen=True)
class SearchOutcome:
    candidates: list[Candidate]
    images: list[Candidate]
    total_candidates: int
    search_time_ms: float
    reranker_used: bool
    reranker_model: str | None
    search_types_used: list[str]
    unsearched: list[Unsearched] = field(default_factory=list)
    """Libraries left out as their index cannot be read (services/search/damaged_brains.py)."""


class LibrarySearch:
    def __init__(
        self,
        chunks: ChunkIndex,
        embedder: Embedder,
        concepts: ConceptGraph,
        documents: DocumentService,
        reranker: Reranker | None = None,
        *,
        calibration: Calibration,
    ) -> None:
        self.calibration = calibration
        self.chunks = chunks
        self.embedder = embedder
        self.concepts = concepts
        self.documents = documents
        self.reranker = reranker

    def search(self, request: SearchRequest) -> SearchOutcome:
        """The search over the request's libraries; one whose index cannot be read is left out
        and named (`unsearched`) when others are searched, refused when it is the only one."""
        started = time.perf_counter()
        by_uid = {lib.uid: lib for lib in request.libraries}
        if request.collection is not None:  # its library alone: refused when damaged, as one is
            by_uid = {uid: lib for uid, lib in by_uid.items() if uid == request.collection.library.uid}

        def over(uids: tuple[str, ...]) -> SearchOutcome:
            return self._search(replace(request, libraries=[by_uid[uid] for uid in uids]), started)

        outcome, unsearched = around_damage(list(by_uid), over)
        return replace(outcome, unsearched=unsearched) if unsearched else outcome

    def _search(self, request: SearchRequest, started: float) -> SearchOutcome:
        used = [t for t in SEARCH_TYPES if t in request.search_types]
        libraries = {lib.uid: lib for lib in request.libraries}
        if request.collection is not None:
            libraries = {k: v for k, v in libraries.items() if k == request.collection.library.uid}
        if not libraries or not request.query.strip() or not used:
            return SearchOutcome([], [], 0, _ms(started), False, None, used)
        chunk_filter = ChunkFilter(
            brain_ids=tuple(libraries),
            path_prefixes=(request.collection.prefix,) if request.collection is not None else (),
            current_only=True,  # a superseded or soft-forgotten memory is history (SearchService.search)
        )
        legs: dict[str, list[Chunk]] = {}
        similarity: dict[str, float] = {}
        weak: set[str] = set()
        vector = self.embedder.embed([request.query])[0].tolist() if "vector" in used else None
        if "vector" in used or "fulltext" in used:
            index_legs, similarity, weak = self._index_legs(request.query, vector, chunk_filter, used)
            legs.update(index_legs)
        if "graph" in used:
            legs["graph"] = self._graph_leg(request.query, chunk_filter)
        fused = self._fused(legs, libraries, weak)
        images = [c for c in fused if item_type_of(c.document) == "image"]
        texts = [c for c in fused if item_type_of(c.document) != "image"]
        limit = max(0, min(request.limit, MAX_LIMIT))
        reranked, model = self._reranked(request, texts) if request.rerank else (None, None)
        best_similarity = max(similarity.values(), default=None)
        ordered = reranked if reranked is not None else _calibrated(texts, best_similarity, self.calibration)
        if request.include_images and images:
            images = self._judged_images(request.query, vector, images, similarity)
        return SearchOutcome(
            candidates=ordered[:limit],
            images=images[:limit] if request.include_images else [],
            total_candidates=len(texts),
            search_time_ms=_ms(started),
            reranker_used=reranked is not None,
            reranker_model=model,
            search_types_used=used,
        )

    def _index_legs(
        self, query: str, vector: list[float] | None, chunk_filter: ChunkFilter, used: Sequence[str]
    ) -> tuple[dict[str, list[Chunk]], dict[str, float], set[str]]:
        """Each index leg run on its own, so its order is its ranking on every adapter (where
        OpenSearch fuses a hybrid query, only the fused score comes back); the similarity of
        each chunk the vector leg found, by chunk id (empty: it did not run or found nothing);
        and the ids of the full-text hits under FULLTEXT_FLOOR of the best BM25."""
        legs: dict[str, list[Chunk]] = {}
        similarity: dict[str, float] = {}
        weak: set[str] = set()
        if "vector" in used and vector is not None:
            dense = ChunkQuery("", vector, chunk_filter, top_k=POOL, candidate_pool=POOL, bm25_weight=0.0)
            hits = self.chunks.search(dense)
            legs["vector"] = [hit.chunk for hit in hits]
            similarity = {h.chunk.id: h.vector_similarity for h in hits if h.vector_similarity is not None}
        if "fulltext" in used:
            words = ChunkQuery(query, None, chunk_filter, top_k=POOL, candidate_pool=POOL, vector_weight=0.0)
            found = self.chunks.search(words)
            legs["fulltext"] = [hit.chunk for hit in found]
            weak = weak_hits([(h.chunk.id, h.bm25_score) for h in found])
            if similarity and vector is not None:
                head = [h.chunk for h in found[:RRF_DEPTH]]
                cosine = cosines(self.chunks, vector, head, similarity)
                weak |= off_meaning([c.id for c in head], cosine, max(similarity.values()))
        return legs, similarity, weak

    def _judged_images(
        self,
        query: str,
        vector: list[float] | None,
        images: list[Candidate],
        similarity: dict[str, float],
    ) -> list[Candidate]:
        """The image candidates that match the query, each scored by the calibrated relevance of
        its own similarity (a stored vector read for those the vector leg did not reach), best
        first: those at IMAGE_FLOOR or above, and those a lexical leg found whatever their score."""
        query_vector = vector if vector is not None else self.embedder.embed([query])[0].tolist()
        cosine = cosines(self.chunks, query_vector, [found.chunk for found in images], similarity)
        kept: list[Candidate] = []
        for found in images:
            relevance = self.calibration(cosine.get(found.chunk.id, 0.0))
            if relevance >= IMAGE_FLOOR or any(leg in found.ranks for leg in LEXICAL_LEGS):
                kept.append(replace(found, score=relevance))
        return sorted(kept, key=lambda c: (-c.score, c.chunk.id))

    def _graph_leg(self, query: str, chunk_filter: ChunkFilter) -> list[Chunk]:
        sizes = {brain_id: self.chunks.count(brain_id) for brain_id in chunk_filter.brain_ids}
        hits = self.concepts.search(chunk_filter.brain_ids, query, limit=POOL * 3, sizes=sizes)
        by_brain: dict[str, list[str]] = {}
        for hit in hits:
            by_brain.setdefault(hit.brain_id, []).append(hit.chunk_id)
        held: dict[str, Chunk] = {}
        for brain_id, ids in by_brain.items():
            held.update(self.chunks.get_many(brain_id, ids))
        out: list[Chunk] = []
        for hit in hits:
            chunk = held.get(hit.chunk_id)
            if chunk is None or not chunk.active or not hit.still_mentions(chunk.text):
                continue
            if chunk_filter.path_prefixes and not chunk.path.startswith(chunk_filter.path_prefixes):
                continue
            out.append(chunk)
            if len(out) == POOL:
                break
        return out

    def _fused(
        self, legs: dict[str, list[Chunk]], libraries: dict[str, Library], weak: set[str]
    ) -> list[Candidate]:
        """RRF over each leg's first RRF_DEPTH hits (full-text hits in `weak` left out), then the
        rest by their sum over the whole legs, scored 0."""
        ranks: dict[str, dict[str, int]] = {}
        chunks: dict[str, Chunk] = {}
        for leg, ranked in legs.items():
            for rank, chunk in enumerate(ranked, start=1):
                ranks.setdefault(chunk.id, {})[leg] = rank
                chunks.setdefault(chunk.id, chunk)
        weights = {uid: leg_weights(lib.library_type) for uid, lib in libraries.items()}

        def weight(leg: str, chunk_id: str) -> float:
            brain_id = chunks[chunk_id].brain_id
            return weights[brain_id][leg] if brain_id in weights else 1.0

        ids = {leg: [chunk.id for chunk in ranked] for leg, ranked in legs.items()}
        scores, whole = rrf_sums(ids, weight, weak)
        # A chunk names its document's brain and path: one batch read, no id pointers to follow.
        docs = self.documents.repo.get_many({(c.brain_id, c.path) for c in chunks.values()})
        fused: list[Candidate] = []
        for chunk_id, chunk in chunks.items():
            doc = docs.get((chunk.brain_id, chunk.path))
            if doc is None or doc.id != chunk.document_id or doc.deleted_at is not None:
                continue
            if doc.brain_id not in libraries:
                continue
            best = min(ranks[chunk_id].items(), key=lambda kv: (kv[1], SEARCH_TYPES.index(kv[0])))
            score = scores.get(chunk_id, 0.0)
            fused.append(Candidate(chunk, libraries[doc.brain_id], doc, score, best[0], ranks[chunk_id]))
        fused.sort(key=lambda c: (-c.score, -whole[c.chunk.id], c.chunk.id))
        return fused

    def _reranked(
        self, request: SearchRequest, fused: list[Candidate]
    ) -> tuple[list[Candidate] | None, str | None]:
        if self.reranker is None or not fused:
            return None, None
        head, tail = fused[:RERANK_POOL], fused[RERANK_POOL:]
        types = {c.library.library_type for c in head}
        instruction = profile_for(types.pop()).rerank_instruction if len(types) == 1 else None
        try:
            ranked = self.reranker.rerank(
                request.query, [c.chunk.text for c in head], instruction=instruction
            )
        except RerankError as exc:
            log.warning("re-ranking failed (%s: %s); the fused order stands", exc.code, exc.message)
            return None, None
        seen: set[int] = set()
        out: list[Candidate] = []
        for r in ranked:
            if 0 <= r.index < len(head) and r.index not in seen:
                seen.add(r.index)
                head[r.index].score = r.score
                out.append(head[r.index])
        out += [c for i, c in enumerate(head) if i not in seen]  # left out by the re-ranker: below
        return out + tail, self.reranker.model_id


def _calibrated(
    candidates: list[Candidate], best_similarity: float | None, calibration: Calibration
) -> list[Candidate]:
    """The fused candidates, in their order, scored over the best one times the relevance of the
    best similarity; as they are when the vector leg did not run."""
    if best_similarity is None or not candidates or candidates[0].score <= 0:
        return candidates
    scale = calibration(best_similarity) / candidates[0].score
    return [replace(c, score=c.score * scale) for c in candidates]


def weak_hits(found: Sequence[tuple[str, float | None]], floor: float = FULLTEXT_FLOOR) -> set[str]:
    """The ids of the full-text hits (id, BM25) scored under `floor` of the best one; none when the
    best is not positive (BM25 is positive on every adapter: a share of anything else means
    nothing)."""
    best = max((score for _, score in found if score is not None), default=0.0)
    if best <= 0:
        return set()
    return {chunk_id for chunk_id, score in found if score is not None and score < floor * best}


def off_meaning(
    found: Sequence[str], cosine: Mapping[str, float], best: float, share: float = FULLTEXT_MEANING
) -> set[str]:
    """The ids of the full-text hits whose cosine with the query is under `share` of the vector
    leg's `best` (or unknown: their vector is gone)."""
    return {chunk_id for chunk_id in found if cosine.get(chunk_id, -1.0) < share * best}


def rrf_sums(
    legs: Mapping[str, Sequence[str]],
    weight: Callable[[str, str], float],
    weak: set[str],
    depth: int = RRF_DEPTH,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each id's RRF sum (k = RRF_K, `weight(leg, id)` / (k + rank)) over its legs' first `depth`
    hits, full-text hits in `weak` left out (the fused score); and over the whole legs (the order
    of the rest)."""
    head: dict[str, float] = {}
    whole: dict[str, float] = {}
    for leg, ranked in legs.items():
        for rank, chunk_id in enumerate(ranked, start=1):
            share = weight(leg, chunk_id) / (RRF_K + rank)
            whole[chunk_id] = whole.get(chunk_id, 0.0) + share
            if rank <= depth and not (leg == "fulltext" and chunk_id in weak):
                head[chunk_id] = head.get(chunk_id, 0.0) + share
    return head, whole


def leg_weights(library_type: str) -> dict[str, float]:
    """Each leg's weight in the fused sum for a library of this type: its profile's full-text and
    vector weights (ingest/profiles.py, measured per type), the graph leg's GRAPH_WEIGHT."""
    profile = profile_for(library_type)
    return {"fulltext": profile.bm25_weight, "vector": profile.vector_weight, "graph": GRAPH_WEIGHT}


def preview(text: str) -> str:
    """About PREVIEW_CHARS of the text, cut at a word boundary, with an ellipsis when cut."""
    flat = " ".join(text.split())
    if len(flat) <= PREVIEW_CHARS:
        return flat
    cut = flat.rfind(" ", 0, PREVIEW_CHARS)
    return flat[: cut if cut > PREVIEW_CHARS // 2 else PREVIEW_CHARS].rstrip() + "…"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
