"""ChunkIndex: chunks with their vectors, searchable by BM25 and vector similarity, fused.

Filters apply inside each leg (not after fusion), so a filtered query still fills its
candidate pool from matching chunks only. A rewrite of a document touches only what changed:
`fingerprints` tells what the index holds, `get_vectors` lends the vectors of unchanged text, and
`upsert` / `delete_chunks` apply the difference (services/documents/indexing.py). `get_chunk` / `get_many`
read chunks by id, for surfaces that hold chunk ids rather than documents. Deleting a brain or
erasing a person goes through `drop_brain` (a whole brain) or the document deletes, then
`ScrubbableChunks.scrub` where the index keeps files of its own, so the text and vectors are gone
for good rather than merely unreferenced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol, runtime_checkable

from cairn.domain.boolean_query import BoolQuery
from cairn.domain.models import Chunk
from cairn.ports.embedder import Vectors


@dataclass(frozen=True)
class ChunkFilter:
    brain_ids: tuple[str, ...]
    path_prefixes: tuple[str, ...] = ()  # any of these prefixes
    tags: tuple[str, ...] = ()  # every one of these tags
    any_tags: tuple[tuple[str, ...], ...] = ()
    """For every group, at least one of its tags (an empty group matches nothing)."""
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    document_ids: tuple[str, ...] = ()  # restrict to these documents
    active_only: bool = True
    facets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(name, values): the chunk's facet `name` is one of `values`, for every pair."""
    importance_min: float | None = None  # importance >= this (chunks without one never match)
    valid_at: datetime | None = None
    """Valid then: valid_from absent or <= it, and valid_to absent or > it."""
    current_only: bool = False  # leave out superseded and expired memories
    owners: tuple[tuple[str, str | None], ...] = ()
    """(brain id, subject): in that brain a chunk with an owner (its facet OWNER_FACET, a ThoughtMCP
    userId) passes only when the owner is `subject` or `subject:<name>`, and none passes with None.
    Brains not named pass every owner. Set from the access rule by
    services/documents/visible_chunks.py, inside both legs like every other part of the filter; no
    surface sets it."""


@dataclass(frozen=True)
class ChunkQuery:
    text: str
    vector: Sequence[float] | None
    filter: ChunkFilter
    top_k: int = 10
    candidate_pool: int = 100  # per leg
    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    nearest: int = 0
    """Also return the vector leg's first `nearest` hits that the fusion ranked past `top_k`, after
    the fused ones, in the vector leg's order: a caller that orders the candidates itself then sees
    the nearest chunks even where the keyword leg fills the fusion's head."""
    documents: int = 0
    """When above 0: a full fused head (`top_k` hits) whose hits, `nearest` included, hold fewer
    distinct documents than this is widened to the fusion's first `candidate_pool`, as if asked
    for that many. A caller that keeps one chunk a document (services/search/service.py) then gets
    enough documents from one call; an index that holds both legs in hand widens without running
    them again (`widened` is the rule)."""
    boolean: BoolQuery | None = None
    """A boolean full-text query (domain/boolean_query.py) for the BM25 leg, in place of `text`:
    the leg keeps only chunks whose title, text or context satisfy it (a phrase within one of
    them; NOT excludes), ranked by BM25 of its positive terms. It does not touch the vector leg:
    callers pass vector=None (given a vector, the legs are fused as usual)."""


def widened(query: ChunkQuery, hits: Sequence[ChunkHit]) -> ChunkQuery | None:
    """The query to answer instead when `hits`, its answer, fall short of `query.documents`
    (ChunkQuery.documents), else None."""
    if query.documents <= 0 or query.top_k >= query.candidate_pool or len(hits) < query.top_k:
        return None
    if len({h.chunk.document_id for h in hits}) >= query.documents:
        return None
    return replace(query, top_k=query.candidate_pool, documents=0)


@dataclass(frozen=True)
class ChunkHit:
    chunk: Chunk
    score: float
    bm25_rank: int | None = None  # 1-based rank in the BM25 leg
    vector_rank: int | None = None  # 1-based rank in the vector leg
    bm25_score: float | None = None
    vector_similarity: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


class ChunkIndex(Protocol):
    def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        """Insert or replace chunks by id; `vectors` has one row per chunk."""

    def set_context(self, brain_id: str, document_id: str, context: str) -> None:
        """Replace the index-only context of a document's first chunk (a no-op if it has none)."""

    def delete_document(self, brain_id: str, document_id: str) -> int:
        """Remove every chunk of a document; returns how many were removed."""

    def activate(self, brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> None:
        """Make exactly `chunk_ids` the document's live chunks: set them active, remove its others.

        Chunks upserted with active=False (staged, under ids apart from the live ones) stay out of
        active-only searches until then. Empty `chunk_ids`: the document has no chunks now.
        Idempotent and safe to retry after a partial failure: ids not present (or not of this
        document) are ignored.
        """

    def delete_chunks(self, brain_id: str, chunk_ids: Sequence[str]) -> int:
        """Remove these chunks of the brain (a staged version that will not go live); returns how many."""

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        """Hybrid search: both legs filtered, fused by weighted RRF, best first, at most top_k."""

    def get_chunks(self, brain_id: str, document_id: str) -> list[Chunk]:
        """A document's chunks in ordinal order."""

    def get_chunk(self, brain_id: str, chunk_id: str) -> Chunk | None:
        """The brain's chunk with this id as get_chunks reads it (context included), live or staged
        (callers check `active`); None when the brain holds no such chunk."""

    def get_many(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunk id → chunk (as get_chunk reads it) of those of `chunk_ids` in the brain, in one
        round trip where the store allows; ids it does not hold, another brain's among them, are
        left out."""

    def fingerprints(self, brain_id: str, document_id: str) -> dict[str, str]:
        """Chunk id → fingerprint (as upserted) of each of a document's chunks, live or staged."""

    def get_vectors(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Vectors]:
        """Chunk id → stored unit-length vector (one row) of those of `chunk_ids` in the brain;
        ids it does not hold are left out."""

    def count(self, brain_id: str) -> int: ...

    def held(self, brain_id: str) -> dict[str, int]:
        """Document id -> how many active chunks the index holds of it in the brain (staged ones,
        of an ingest not yet committed, are left out): what a check compares with the records
        (services/documents/index_repair.py)."""

    def drop_brain(self, brain_id: str) -> int:
        """Remove every chunk of the brain and everything the index keeps for it; returns how many
        chunks were removed. Idempotent (0 for an unknown brain); a later upsert into the brain
        starts it afresh."""


@dataclass(frozen=True)
class Compaction:
    """What compacting one brain's vectors did: rows of its vector file before and after (with
    rows written while it compacted, before is the old file's count when the new one replaced
    it: those rows are in both and never count as reclaimed), the live rows, the rows its
    approximate index covers, how long it took and how long writers waited for it (the final
    renumbering transaction)."""

    brain_id: str
    epoch: int
    rows_before: int
    rows_after: int
    live_rows: int
    indexed_rows: int
    seconds: float
    writes_paused: float = 0.0

    @property
    def reclaimed(self) -> int:
        return self.rows_before - self.rows_after


class CheckStopped(Exception):
    """A check or comparison ended before it finished, because its process is stopping: nothing
    it read was recorded (neither a file found as last verified nor damage), and the next start
    checks the brain again."""


Stop = Callable[[], bool]  # whether the process is stopping: long background work ends early


@runtime_checkable
class CompactableChunks(Protocol):
    """A ChunkIndex that keeps its own vector files and index (the embedded store): compacted on
    demand, warmed in the background at start-up. OpenSearch manages its segments itself."""

    def brain_ids(self) -> list[str]: ...

    def compact(self, brain_id: str, *, threads: int | None = None) -> Compaction | None: ...

    def vectors_damaged(self, brain_id: str) -> bool:
        """Whether the brain's vector file is recorded damaged: its compaction is refused (None)
        until the damage is repaired (`cairn check`, a server's repair)."""
        ...

    def warm(self, stop: Stop | None = None) -> None: ...


@runtime_checkable
class StampedChunks(Protocol):
    """A ChunkIndex that records when it last wrote each brain, in the transaction of the write
    (the embedded store, whose database can be restored from a backup or lose its last writes
    to damage): records written after that are the ones it may not reflect."""

    def last_written(self, brain_id: str) -> datetime | None:
        """When a write last changed the brain's chunks; None when not known."""


ANN_NONE = "none"  # the brain is small enough for exact search: no approximate index
ANN_OK = "ok"
ANN_REBUILDING = "rebuilding"  # missing, stale or damaged: exact search until it is built again


@dataclass(frozen=True)
class FileCheck:
    """What checking the files an index keeps for one brain found: the whole rows its vector file
    holds, how many chunks point at vectors that cannot be read back as written (unsound: the
    brain's vector search is refused until they are embedded again), its ANN index's state, and
    why its keyword index cannot be read ("" when it can; its searches are refused as damaged
    until `rebuild_keywords`)."""

    brain_id: str
    vector_rows: int
    unsound_chunks: int
    ann: str
    keywords: str = ""


@dataclass(frozen=True)
class Discarded:
    """A document's chunks removed because their vectors were unsound, and the index-only context
    its first chunk carried when that chunk was among them (None otherwise): a rebuild gives it
    back where the document's siblings no longer record it."""

    chunk_ids: tuple[str, ...]
    context: str | None = None


@runtime_checkable
class VerifiableChunks(Protocol):
    """A ChunkIndex that keeps its own derived files (the embedded store's vector files, ANN
    indexes and keyword tables): they are checked against what the index records, and what is
    damaged is set aside for the core to rebuild from the records
    (services/documents/index_repair.py). OpenSearch keeps its own segments' integrity."""

    def check(
        self, brain_id: str, *, deep: bool = False, reread: bool = True, stop: Stop | None = None
    ) -> FileCheck:
        """Check the brain's files; with `deep`, its keyword index through and through too;
        `reread` False: files the index knows to be as it last verified them (nothing wrote them
        since) are not read again. CheckStopped when `stop` says so while it reads them."""

    def discard_unsound(self, brain_id: str) -> dict[str, Discarded]:
        """Remove the chunks whose vectors are unsound; document id -> what was removed."""

    def rebuild_keywords(self, brain_id: str) -> dict[str, Discarded]:
        """Make the brain's keyword index again from its chunks' text; document id -> the chunks
        removed because their text could not be read back either (indexed again by the caller)."""

    def on_damage(self, listener: Callable[[str], None]) -> None:
        """Call `listener(brain_id)` whenever the index finds a brain's files damaged in use."""


@runtime_checkable
class ScrubbableChunks(Protocol):
    """A ChunkIndex whose files may keep what deleted chunks left behind (a deleted row stays in
    storage until it is merged or overwritten): erasure (deleting a brain, erasing a person)
    scrubs the brain once its deletes are done. The embedded index implements it; so does
    OpenSearch, as far as a force merge reaches (opensearch_chunks.py says how far)."""

    def scrub(self, brain_id: str) -> None:
        """Leave nothing of the brain's deleted chunks in the index's own files: their text, terms
        and vectors are rewritten out of the storage that still holds them (vector files, ANN
        index, full-text segments, free pages, logs), so they cannot be read back from disk.
        Chunks deleted while it runs may remain; a brain already dropped is scrubbed of what the
        drop left behind."""
