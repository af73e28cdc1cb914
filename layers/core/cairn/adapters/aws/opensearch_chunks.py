"""ChunkIndex on OpenSearch: BM25 + faiss HNSW k-NN in one index per vector dimension.

Layout. One index per dimension (`{index_prefix}-{dimension}`) holds every brain's chunks, with
`brain_id` a keyword that both legs filter on. A knn_vector field has one fixed dimension, so
brains with another embedding size get their own index; an index per brain would cost a shard
(and its HNSW graphs) per brain on a small domain, an index creation on each new brain, and a
multi-index query for multi-brain searches. The price: BM25's document frequencies are shared
by the brains of one index (the embedded index keeps them per brain), which shifts scores, not
which chunks match.

Writes. A chunk's `_id` is its id, so re-ingesting overwrites. `upsert` is one or more `_bulk`
requests (split below `bulk_bytes`, as managed domains refuse bodies over 10 MiB) with
`refresh=wait_for` by default: the call returns once its chunks are searchable, without forcing
a refresh of its own (an ingest made of many batches would otherwise write a small segment per
batch); `refresh="true"` trades that for speed in tests. `delete_document` is a
`_delete_by_query` on brain and document, `set_context` an `_update_by_query` on the document's
ordinal-0 chunk, both refreshed before they return, so every write is seen by the next search.
A staged version (chunks upserted inactive) goes live by `activate`: an `_update_by_query` on its
ids, then a `_delete_by_query` of the document's other chunks; either one that meets a version
conflict or a shard failure raises, and a retry finishes the job. `drop_brain` is a
`_delete_by_query` on the brain (refreshed, raising like `activate`); `scrub` a force merge
expunging deleted documents from the index's segments, which Lucene otherwise keeps, only marked
deleted, until merges get to them.

Rewrites. `fingerprints` lists a document's chunk ids and fingerprints (sources without text or
vectors, paged like `get_chunks`); `get_vectors` reads the stored embeddings of some chunks, a
thousand ids a request. `get_chunk` / `get_many` read whole chunks by id the same way (an `ids`
query filtered on the brain, since one index holds every brain's chunks).

Older indexes. An index created by an earlier version lacks the fields added since (fingerprint,
then current / facets / importance; opensearch_schema.ADDED_FIELDS) and refuses them, its mapping
being strict. Opening an existing index reads its mapping and adds what it lacks; a bulk still
refused for one of those fields (the index re-created behind our back by an older process) does
the same and is sent again. Its chunks stored before then have no `current` (read as current),
no facets and no importance; their tags' words are filled in by a back-fill task the first open
starts (opensearch_schema.py).

Search. Terms come from the embedded index's query parser (a boolean query's positive terms, the
query itself a filter of the BM25 leg: opensearch_queries.py) and vectors are scaled to unit length
(inner product = cosine), so the legs match the embedded ones; each leg carries the whole filter.
A query with one leg (no terms, no vector, or a zero weight) runs as that leg alone. With two:
`fusion="client"` sends both legs in one `_msearch` and fuses them here exactly as the embedded
index does (ranks, raw scores, any rrf_k and weights). `fusion="pipeline"` sends one `hybrid`
query fused by the `score-ranker-processor` pipeline, created with the index on first use,
whenever the cluster can fuse that query (OpenSearch 2.19+, 3.1+ for unequal leg weights, rrf_k
>= 1; the first use reads the version, and the query asks for no `nearest`) and falls back to
client fusion otherwise. Its hits carry the fused score but no per-leg ranks or raw scores
(opensearch_fusion.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import numpy as np
from opensearchpy import NotFoundError, OpenSearch, OpenSearchException, RequestError

from cairn.adapters.aws.opensearch_client import cluster_version, opensearch_client
from cairn.adapters.aws.opensearch_errors import describe, error_type, failed_items, translate
from cairn.adapters.aws.opensearch_fusion import fuse_legs, leg_hits, pipeline_hits, server_fusion
from cairn.adapters.aws.opensearch_queries import (
    DEFAULT_FIELD_WEIGHTS,
    SOURCE,
    Body,
    bm25_query,
    brain_query,
    bulk_bodies,
    chunks_query,
    document_query,
    hybrid_body,
    knn_query,
    leg_body,
    others_query,
    staged_query,
)
from cairn.adapters.aws.opensearch_schema import (
    ADDED_FIELDS,
    TAG_WORDS,
    VECTOR_FIELD,
    from_source,
    index_body,
    missing_fields,
    pipeline_body,
    pipeline_rank_constant,
    tag_words_backfill,
    upgraded_meta,
    upgrades_done,
)
from cairn.adapters.local.fts_boolean import leg_terms
from cairn.adapters.local.vector_store import unit_rows
from cairn.domain.errors import CairnError, Conflict, InvalidInput
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkHit, ChunkQuery, widened
from cairn.ports.embedder import Vectors

__all__ = ["OpenSearchChunkIndex", "opensearch_client"]
log = logging.getLogger(__name__)

Fusion = Literal["pipeline", "client"]
Refresh = Literal["wait_for", "true"]
T = TypeVar("T")

HYBRID_RRF = (2, 19)  # hybrid query + score-ranker-processor
WEIGHTED_RRF = (3, 1)  # ... with per-sub-query weights
MAX_WINDOW = 10_000  # index.max_result_window: the deepest a leg (k, pagination_depth) may go
_PAGE = 1_000
DELETE_ROUNDS = 5  # delete-by-query runs of one document delete at most, while chunks are held by updates
_HEAVY = ["text", "title", "context"]  # left out of the sources a rewrite reads
_SET_CONTEXT = "ctx._source.context = params.context"
_ACTIVATE = "ctx._source.active = true"
# The most chunk ids one activate / delete_chunks takes (a document has at most ~5k chunks); the
# ids travel in the request body, which a managed domain caps at 10 MiB.
MAX_CHUNK_IDS = 100_000


class OpenSearchChunkIndex:
    def __init__(
        self,
        client: OpenSearch,
        dimension: int,
        *,
        index_prefix: str = "cairn-chunks",
        pipeline: str = "cairn-hybrid-rrf",
        candidate_pool: int = 100,
        fusion: Fusion = "pipeline",
        refresh: Refresh = "wait_for",
        field_weights: tuple[float, float, float] = DEFAULT_FIELD_WEIGHTS,
        bulk_bytes: int = 5_000_000,
    ) -> None:
        """`candidate_pool` caps each leg's depth (never below the query's top_k)."""
        if dimension <= 0 or candidate_pool <= 0:
            raise ValueError("dimension and candidate_pool must be positive")
        self.client = client
        self.dimension = dimension
        self.index = f"{index_prefix}-{dimension}"
        self.pipeline = pipeline
        self.candidate_pool = candidate_pool
        self.fusion = fusion
        self.refresh = refresh
        self.field_weights = field_weights
        self.bulk_bytes = bulk_bytes
        self._rank_constant = pipeline_rank_constant()
        self._version = (0, 0)  # the cluster's, learnt by ensure() for pipeline fusion
        self._ready = False
        self._lock = threading.Lock()

    # -- setup --------------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the index (and, for pipeline fusion, the search pipeline) unless they exist."""
        if self._ready:
            return
        with self._lock:
            if not self._ready:
                self._call("index creation", self._create_index)
                if self.fusion == "pipeline":
                    self._version = self._call("version check", cluster_version, client=self.client)
                    if self._version >= HYBRID_RRF:
                        self._call("search pipeline creation", self._create_pipeline)
                self._ready = True

    def _create_index(self) -> None:
        if self.client.indices.exists(index=self.index):
            self._add_missing_fields()
            return
        try:
            self.client.indices.create(index=self.index, body=index_body(self.dimension))
        except RequestError as exc:
            if error_type(exc) != "resource_already_exists_exception":  # another process won the race
                raise

    def _create_pipeline(self) -> None:
        try:
            self.client.search_pipeline.get(id=self.pipeline)
        except NotFoundError:
            self.client.search_pipeline.put(id=self.pipeline, body=pipeline_body())

    # -- writes -------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        if not chunks:
            return
        matrix = unit_rows(vectors)
        if matrix.shape != (len(chunks), self.dimension) or not np.isfinite(matrix).all():
            raise InvalidInput(f"expected {len(chunks)} finite vectors of dimension {self.dimension}")
        self.ensure()
        for body, count in bulk_bodies(self.index, chunks, matrix, self.bulk_bytes):
            failures = self._bulk(body)
            if failures and all(_unmapped_added_field(f) for f in failures):
                self._add_missing_fields()
                failures = self._bulk(body)
            if failures:
                raise CairnError(
                    f"OpenSearch refused {len(failures)} of {count} chunks (first: {failures[0]})"
                )

    def _bulk(self, body: bytes) -> list[str]:
        response = self._call("bulk index", self.client.bulk, body=body, params={"refresh": self.refresh})
        return failed_items(response)

    def _add_missing_fields(self) -> None:
        """Add the fields an index created by an earlier version lacks to its (strict) mapping:
        adding a field to a mapping is allowed, and adding it again changes nothing."""
        found: Body = self._call("mapping read", self.client.indices.get_mapping, index=self.index)
        index: Body = next(iter(found.values()), {})  # keyed by the concrete index name
        mappings = index.get("mappings", {})
        body = missing_fields(self.dimension, mappings.get("properties", {}))
        if body:
            self._call("mapping update", self.client.indices.put_mapping, index=self.index, body=body)
        if TAG_WORDS not in upgrades_done(mappings):
            self._backfill_tag_words(mappings)

    def _backfill_tag_words(self, mappings: Body) -> None:
        """Start the tag words' back-fill as a task on the cluster (no Lambda waits for it) and list
        it in the mapping's `_meta`. One the cluster refuses is logged and left for the next open:
        searches work meanwhile, only old chunks' tags are not yet matched."""
        upgrade = TAG_WORDS
        try:
            task = self._call(
                f"{upgrade} back-fill",
                self.client.update_by_query,
                index=self.index,
                body=tag_words_backfill(),
                params={"conflicts": "proceed", "wait_for_completion": "false", "refresh": "true"},
            )
        except CairnError as exc:
            log.warning(
                "index %s: the %s back-fill was not started (next open retries): %s", self.index, upgrade, exc
            )
            return
        log.info("index %s: %s back-fill started as task %s", self.index, upgrade, task.get("task"))
        meta = upgraded_meta(mappings, upgrade)
        self._call("mapping update", self.client.indices.put_mapping, index=self.index, body=meta)

    def set_context(self, brain_id: str, document_id: str, context: str) -> None:
        self.ensure()
        script = {"source": _SET_CONTEXT, "lang": "painless", "params": {"context": context}}
        body = {"query": document_query(brain_id, document_id, first_only=True), "script": script}
        self._call(
            "context update",
            self.client.update_by_query,
            index=self.index,
            body=body,
            params={"refresh": "true"},
        )

    def delete_document(self, brain_id: str, document_id: str) -> int:
        """Every chunk of the document gone. A chunk a concurrent update-by-query (a sibling's
        context, an activation) held at that moment is skipped by the delete, not deleted: the
        delete runs again until none is, else it raises Conflict, so no deleted document stays
        findable."""
        self.ensure()
        body = {"query": document_query(brain_id, document_id)}
        deleted = 0
        for _ in range(DELETE_ROUNDS):
            response = self._call(
                "document delete",
                self.client.delete_by_query,
                index=self.index,
                body=body,
                params={"refresh": "true", "conflicts": "proceed"},
            )
            deleted += int(response.get("deleted", 0))
            if not int(response.get("version_conflicts", 0)) and not response.get("failures"):
                return deleted
        raise Conflict(
            f"OpenSearch document delete kept meeting concurrent writes ({DELETE_ROUNDS} rounds): retry it"
        )

    def activate(self, brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> None:
        _check_size(chunk_ids)
        self.ensure()
        if chunk_ids:
            script = {"source": _ACTIVATE, "lang": "painless"}
            body = {"query": staged_query(brain_id, document_id, chunk_ids), "script": script}
            self._by_query("activation", self.client.update_by_query, body)
        body = {"query": others_query(brain_id, document_id, chunk_ids)}
        self._by_query("activation cleanup", self.client.delete_by_query, body)

    def delete_chunks(self, brain_id: str, chunk_ids: Sequence[str]) -> int:
        _check_size(chunk_ids)
        if not chunk_ids:
            return 0
        self.ensure()
        body = {"query": chunks_query(brain_id, chunk_ids)}
        return int(self._by_query("chunk delete", self.client.delete_by_query, body).get("deleted", 0))

    def drop_brain(self, brain_id: str) -> int:
        """A delete by query on the brain; refreshed ("true") whatever `refresh` says, as every
        by-query write here: `_delete_by_query` takes no "wait_for"."""
        self.ensure()
        body = {"query": brain_query(brain_id)}
        return int(self._by_query("brain delete", self.client.delete_by_query, body).get("deleted", 0))

    def scrub(self, brain_id: str) -> None:
        """Force merge the index with only_expunge_deletes, so the segments holding deleted
        chunks are rewritten without them. One index holds every brain's chunks, so it runs on
        all of them. OpenSearch still leaves segments whose deleted share is under
        index.merge.policy.expunge_deletes_allowed (10 % by default) and the deletes it retains
        for its operation history (index.soft_deletes.retention_lease.period, 12 h): later merges
        remove those."""
        self.ensure()
        response: Body = self._call(
            "force merge",
            self.client.indices.forcemerge,
            index=self.index,
            params={"only_expunge_deletes": "true"},
        )
        failed = int(response.get("_shards", {}).get("failed", 0))
        if failed:
            raise CairnError(f"OpenSearch force merge failed on {failed} shards: retry it")

    def _by_query(self, operation: str, request: Callable[..., Body], body: Body) -> Body:
        """An update/delete by query, refreshed; one that left documents untouched raises."""
        params = {"refresh": "true", "conflicts": "proceed"}
        response = self._call(operation, request, index=self.index, body=body, params=params)
        conflicts, failures = int(response.get("version_conflicts", 0)), response.get("failures") or []
        if conflicts:
            raise Conflict(f"OpenSearch {operation} met {conflicts} concurrent writes: retry it")
        if failures:
            raise CairnError(f"OpenSearch {operation} failed on {len(failures)} chunks: retry it")
        return response

    # -- reads --------------------------------------------------------------------------

    def get_chunks(self, brain_id: str, document_id: str) -> list[Chunk]:
        self.ensure()
        body: Body = {
            "size": _PAGE,
            "query": document_query(brain_id, document_id),
            "sort": [{"ordinal": "asc"}, {"id": "asc"}],
            "_source": SOURCE,
        }
        chunks: list[Chunk] = []
        while True:
            response = self._call("chunk listing", self.client.search, index=self.index, body=body)
            hits = response["hits"]["hits"]
            chunks += [from_source(hit["_source"]) for hit in hits]
            if len(hits) < _PAGE:
                return chunks
            body = {**body, "search_after": hits[-1]["sort"]}

    def fingerprints(self, brain_id: str, document_id: str) -> dict[str, str]:
        self.ensure()
        body: Body = {
            "size": _PAGE,
            "query": document_query(brain_id, document_id),
            "sort": [{"ordinal": "asc"}, {"id": "asc"}],
            "_source": {"excludes": [*_HEAVY, VECTOR_FIELD]},
        }
        found: dict[str, str] = {}
        while True:
            response = self._call("fingerprint listing", self.client.search, index=self.index, body=body)
            hits = response["hits"]["hits"]
            found.update((hit["_source"]["id"], hit["_source"].get("fingerprint", "")) for hit in hits)
            if len(hits) < _PAGE:
                return found
            body = {**body, "search_after": hits[-1]["sort"]}

    def get_chunk(self, brain_id: str, chunk_id: str) -> Chunk | None:
        return self.get_many(brain_id, [chunk_id]).get(chunk_id)

    def get_many(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        sources = self._sources("chunk read", brain_id, chunk_ids, SOURCE)
        return {source["id"]: from_source(source) for source in sources}

    def get_vectors(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Vectors]:
        _check_size(chunk_ids)
        sources = self._sources("vector read", brain_id, chunk_ids, {"excludes": _HEAVY})
        return {source["id"]: np.asarray(source[VECTOR_FIELD], dtype=np.float32) for source in sources}

    def _sources(self, operation: str, brain_id: str, chunk_ids: Sequence[str], source: Body) -> list[Body]:
        """The sources of the brain's chunks among `chunk_ids`, a thousand ids a search: the brain
        is filtered on by the cluster, so another brain's chunk under one of the ids never comes back."""
        if not chunk_ids:
            return []
        self.ensure()
        found: list[Body] = []
        unique = list(dict.fromkeys(chunk_ids))
        for first in range(0, len(unique), _PAGE):
            page = unique[first : first + _PAGE]
            body = {"size": len(page), "query": chunks_query(brain_id, page), "_source": source}
            response = self._call(operation, self.client.search, index=self.index, body=body)
            found += [hit["_source"] for hit in response["hits"]["hits"]]
        return found

    def held(self, brain_id: str) -> dict[str, int]:
        """A page of chunk ids at a time (for maintenance: a brain's every chunk is listed)."""
        self.ensure()
        body: Body = {
            "size": _PAGE,
            "query": {"bool": {"filter": [brain_query(brain_id), {"term": {"active": True}}]}},
            "sort": [{"id": "asc"}],
            "_source": {"includes": ["document_id"]},
        }
        found: dict[str, int] = {}
        while True:
            response = self._call("chunk listing", self.client.search, index=self.index, body=body)
            hits = response["hits"]["hits"]
            for hit in hits:
                document_id = hit["_source"]["document_id"]
                found[document_id] = found.get(document_id, 0) + 1
            if len(hits) < _PAGE:
                return found
            body = {**body, "search_after": hits[-1]["sort"]}

    def count(self, brain_id: str) -> int:
        self.ensure()
        body = {"query": brain_query(brain_id)}
        response = self._call("count", self.client.count, index=self.index, body=body)
        return int(response["count"])

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        hits = self._answer(query)
        wider = widened(query, hits)  # the cluster fuses the legs: asked again for the wider head
        return hits if wider is None else self._answer(wider)

    def _answer(self, query: ChunkQuery) -> list[ChunkHit]:
        if query.rrf_k < 0 or query.bm25_weight < 0 or query.vector_weight < 0:
            raise InvalidInput("rrf_k and the leg weights must not be negative")
        if query.top_k <= 0 or not query.filter.brain_ids:
            return []
        boolean = query.boolean
        terms = leg_terms(query)
        use_vector = query.vector is not None and query.vector_weight > 0
        vector = self._query_vector(query.vector) if use_vector else None
        if not terms and vector is None:
            return []
        self.ensure()
        pool = min(max(query.candidate_pool, query.top_k), max(self.candidate_pool, query.top_k), MAX_WINDOW)
        bm25 = bm25_query(terms, query.filter, self.field_weights, boolean) if terms else None
        knn = knn_query(vector, query.filter, pool) if vector is not None else None
        # The cluster's fused answer holds no leg's ranks, so a query asking for the vector leg's
        # nearest (ChunkQuery.nearest) is fused here.
        server = self.fusion == "pipeline" and self._version >= HYBRID_RRF and query.nearest <= 0
        if bm25 is not None and knn is not None and server:
            fusion = server_fusion(query, self._rank_constant, weighted=self._version >= WEIGHTED_RRF)
            if fusion is not None:
                body = hybrid_body([bm25, knn], pool, min(query.top_k, MAX_WINDOW), fusion.inline)
                params = {"search_pipeline": self.pipeline} if fusion.inline is None else {}
                response = self._call(
                    "hybrid search", self.client.search, index=self.index, body=body, params=params
                )
                return pipeline_hits(response, fusion.scale)
        return self._fused_on_client(bm25, knn, pool, query)

    def _fused_on_client(
        self, bm25: Body | None, knn: Body | None, pool: int, query: ChunkQuery
    ) -> list[ChunkHit]:
        searches: list[Body] = []
        for leg in (bm25, knn):
            if leg is not None:
                searches += [{"index": self.index}, leg_body(leg, pool)]
        response = self._call("search", self.client.msearch, body=searches)
        results = response["responses"]
        for result in results:
            if "error" in result:
                error = InvalidInput if result.get("status") == 400 else CairnError
                raise error(
                    f"OpenSearch search leg failed with status {result.get('status')} ({describe(result)})"
                )
        bm25_hits = leg_hits(results[0]) if bm25 is not None else []
        knn_hits = leg_hits(results[-1]) if knn is not None else []
        return fuse_legs(bm25_hits, knn_hits, query)

    # -- helpers ------------------------------------------------------------------------

    def _query_vector(self, vector: Sequence[float] | None) -> list[float]:
        array = np.asarray(vector, dtype=np.float32)
        if array.shape != (self.dimension,) or not np.isfinite(array).all():
            raise InvalidInput(f"query vector must be {self.dimension} finite floats")
        unit: list[float] = unit_rows(array)[0].astype(np.float64).tolist()
        return unit

    def _call(self, operation: str, request: Callable[..., T], **arguments: Any) -> T:
        try:
            return request(**arguments)
        except OpenSearchException as exc:
            if isinstance(exc, NotFoundError) and error_type(exc) == "index_not_found_exception":
                self._ready = False  # deleted behind our back: the next call creates it again
            raise translate(exc, operation) from exc


def _unmapped_added_field(failure: str) -> bool:
    """A bulk item refused because the index was created before one of ADDED_FIELDS."""
    return "strict_dynamic_mapping_exception" in failure and any(name in failure for name in ADDED_FIELDS)


def _check_size(chunk_ids: Sequence[str]) -> None:
    if len(chunk_ids) > MAX_CHUNK_IDS:
        raise InvalidInput(f"at most {MAX_CHUNK_IDS} chunk ids per call, got {len(chunk_ids)}")
