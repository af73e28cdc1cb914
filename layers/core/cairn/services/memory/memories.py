"""Typed memories: small documents with a memory facet, for every surface that stores them.

Types and their lifecycles:
- `event`: something happened; append-only. The consolidation job soft-expires events nobody
  read for EVENT_TTL_DAYS when their importance is medium or low.
- `fact`: knowledge that changes; a fact with a `key` supersedes the current fact with that key.
- `decision`: a choice and its reason; append-only, never expires.
- `status`: the current state of something; a status supersedes the current one of its `subject`.
- `note`: anything else (what the canonical surface writes).

A memory lives at `memories/<type>/<id>.md`; its text is scrubbed of credentials first
(domain/scrub.py). Three kinds of claim records, written in the same transaction as the memory,
keep the rules atomic on every record store (one conditional transaction: SQLite's or
DynamoDB's TransactWriteItems):
- `key#…` / `subject#…`: the current memory of a fact key or status subject. A writer commits its
  memory, the claim (conditional on the version it read) and the superseded memory's record
  (conditional on its version) together; a concurrent writer's transaction fails and retries
  against the new current memory, so exactly one stays current whatever the interleaving.
- `hash#<type>#<client>#<hash>`: the memory holding that text for that client and type. A
  store whose text is already held by a current memory returns it instead (a duplicate).
- `memtime#<brain>` items ordered by creation time, so "what happened since T" reads a range.

Superseded memories stay (with `superseded_by`, `superseded_at` and `valid_to`), searchable
when history is asked for; deletes are soft.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cairn.auth import access
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, MemoryFacet, MemoryType, MetadataValue
from cairn.domain.scrub import scrub
from cairn.domain.text import excerpt
from cairn.ports.chunks import ChunkFilter, ChunkHit
from cairn.ports.clock import Clock
from cairn.ports.records import Item, Put, RecordStore
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.documents.service import DocumentService
from cairn.services.memory.entities import EntityService
from cairn.services.memory.memory_ranking import (
    DECAYING,
    DEFAULT_IMPORTANCE,
    effective_confidence,
    effective_score,
    similarity_score,
)
from cairn.services.repositories import all_items
from cairn.services.search.access import Access, AccessLog
from cairn.services.search.service import SearchService

PREFIX = "memories/"
EVENT_TTL_DAYS = 30
EXPIRE_PER_RUN = 500
MAX_CONTENT_CHARS = 100_000
TITLE_CHARS = 80
SUPERSEDES = "supersedes"
"""Metadata of a memory that superseded another: that one's id."""
_RETRIES = 64
COUNT_MAX_AGE_S = 30.0
COUNTED_TYPES = (MemoryType.event, MemoryType.fact, MemoryType.decision, MemoryType.status)
MEMORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
"""A caller's own memory id (a restore): it becomes part of the memory's path."""


@dataclass(frozen=True)
class MemoryInput:
    type: MemoryType
    content: str
    source_agent: str | None = None
    client_id: str = "global"
    category: str | None = None
    importance: float = DEFAULT_IMPORTANCE
    knowledge_category: str | None = None
    key: str | None = None  # facts only
    subject: str | None = None  # statuses only
    status_value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    sector: str | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    tags: Sequence[str] = ()
    memory_id: str | None = None  # keep this id (a restore); else a fresh one


@dataclass(frozen=True)
class Stored:
    memory: Document
    deduplicated: bool
    supersedes: str | None = None


@dataclass(frozen=True)
class MemoryQuery:
    """Filters of a memory search; empty tuples filter nothing."""

    types: tuple[str, ...] = ()
    client_ids: tuple[str, ...] = ()
    source_agents: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    knowledge_categories: tuple[str, ...] = ()
    include_superseded: bool = False
    at_time: datetime | None = None
    """What was true then: validity decides, superseded memories included."""
    limit: int = 10
    count_access: bool = True


@dataclass(frozen=True)
class MemoryHit:
    memory: Document
    text: str  # the best-matching chunk's text
    score: float | None  # vector similarity in 0..1; None for a keyword-only hit
    effective_score: float
    confidence: float
    access: Access
    bm25_rank: int | None
    vector_rank: int | None


@dataclass(frozen=True)
class Deleted:
    memory: Document
    already_inactive: bool


@dataclass(frozen=True)
class Updated:
    memory: Document
    fields: list[str]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def memory_path(kind: MemoryType, memory_id: str) -> str:
    return f"{PREFIX}{kind.value}/{memory_id}.md"


def _claim(brain_id: str, kind: str, *parts: str) -> tuple[str, str]:
    # Hashed: keys and subjects are caller text of any length and alphabet.
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]
    return f"memory#{brain_id}", f"{kind}#{digest}"


def _time_key(brain_id: str, at: datetime, memory_id: str) -> tuple[str, str]:
    return f"memtime#{brain_id}", f"{_sortable(at)}#{memory_id}"


def _sortable(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class MemoryService:
    def __init__(
        self,
        documents: DocumentService,
        records: RecordStore,
        search: SearchService,
        clock: Clock,
        access: AccessLog | None = None,
        *,
        entities: EntityService | None = None,
    ) -> None:
        self.entities = entities
        self._counted: dict[tuple[str, str | None], tuple[float, tuple[int, int]]] = {}
        self._counted_lock = threading.Lock()
        """Entity extraction and links at store time (services/memory/entities.py); None: none kept."""
        self.documents = documents
        self.records = records
        self.search_service = search
        self.clock = clock
        self.access = access

    # -- writes ----------------------------------------------------------------------------

    def store(self, brain: Brain, m: MemoryInput) -> Stored:
        """Store a memory: a duplicate of a current one returns it; a keyed fact or a status
        supersedes the current one of its key or subject, atomically."""
        text = _checked(m)
        digest = content_hash(text)
        client = m.client_id or "global"
        if m.memory_id is not None:
            self._check_restore(brain, m.type, m.memory_id)
        for _ in range(_RETRIES):
            duplicate = self._duplicate(brain, m.type, client, digest)
            if duplicate is not None:
                return Stored(duplicate, deduplicated=True)
            try:
                return self._store_once(brain, m, text, digest, client)
            except Conflict:
                continue  # another writer moved a claim we read: read them again
        raise Conflict("too many concurrent writers of this memory's key, subject or text; retry")

    def _check_restore(self, brain: Brain, kind: MemoryType, memory_id: str) -> None:
        """A kept id may overwrite the memory it names (upsert), never another document: one of
        another brain, another type, or not a memory."""
        if not MEMORY_ID.match(memory_id):
            raise InvalidInput(
                "memory id must be 1-128 letters, digits, '_', '.' or '-', starting alphanumeric"
            )
        held = self.documents.repo.get_by_id(memory_id)
        if held is not None and (held.brain_id != brain.id or held.path != memory_path(kind, memory_id)):
            raise InvalidInput(f"memory id {excerpt(memory_id)} is already used by another document")

    def _store_once(self, brain: Brain, m: MemoryInput, text: str, digest: str, client: str) -> Stored:
        now = self.clock.now()
        memory_id = m.memory_id or new_id("mem")
        hash_key = _claim(brain.id, "hash", m.type.value, client, digest)
        hash_claim = self.records.get(*hash_key)
        ops: list[Put] = [
            Put(Item(*hash_key, data={"doc_id": memory_id}), hash_claim.version if hash_claim else 0),
            Put(Item(*_time_key(brain.id, now, memory_id), data={"doc_id": memory_id})),
        ]
        line = self._supersede_key(brain, m)
        old: Document | None = None
        if line is not None:
            claim = self.records.get(*line)
            old = self._current(brain, claim.data["doc_id"]) if claim else None
            ops.append(Put(Item(*line, data={"doc_id": memory_id}), claim.version if claim else 0))
            if old is not None and old.id != memory_id:
                assert old.memory is not None
                ended = old.memory.model_copy(
                    update={
                        "superseded_by": memory_id,
                        "superseded_at": now,
                        "valid_to": old.memory.valid_to or now,
                    }
                )
                superseded = old.model_copy(update={"memory": ended, "updated_at": now})
                ops.append(self.documents.repo.put_op(superseded, old.version))
        facet = MemoryFacet(
            type=m.type,
            key=m.key if m.type is MemoryType.fact else None,
            subject=m.subject if m.type is MemoryType.status else None,
            status_value=m.status_value if m.type is MemoryType.status else None,
            importance=m.importance,
            category=m.category,
            sector=m.sector,
            source_agent=m.source_agent,
            client_id=client,
            valid_from=m.valid_from or (now if m.type in DECAYING else None),
            valid_to=m.valid_to,
            knowledge_category=m.knowledge_category,
            content_hash=digest,
        )
        metadata = {**m.metadata, **({SUPERSEDES: old.id} if old is not None and old.id != memory_id else {})}
        info = DocumentInput(
            title=_title(text), tags=m.tags, metadata=metadata, memory=facet, doc_id=memory_id
        )
        # The superseded memory's record changes in the same commit: its chunks follow it there.
        outcome = self.documents.write(brain, memory_path(m.type, memory_id), text.encode(), info, also=ops)
        if self.entities is not None:  # after the commit; idempotent, so a retry repairs a crash here
            doc = outcome.document
            mentions = self.entities.extract(text, client_id=client, source_agent=m.source_agent)
            # a kept id may be an upsert: drop the links its old text had
            link = self.entities.relink if m.memory_id else self.entities.record_mentions
            link(brain, doc.id, mentions, doc.created_at)
        replaced = old.id if old is not None and old.id != memory_id else None
        return Stored(outcome.document, deduplicated=False, supersedes=replaced)

    def _supersede_key(self, brain: Brain, m: MemoryInput) -> tuple[str, str] | None:
        if m.type is MemoryType.fact and m.key:
            return _claim(brain.id, "key", m.key)
        if m.type is MemoryType.status and m.subject:
            return _claim(brain.id, "subject", m.subject)
        return None

    def _duplicate(self, brain: Brain, kind: MemoryType, client: str, digest: str) -> Document | None:
        claim = self.records.get(*_claim(brain.id, "hash", kind.value, client, digest))
        if claim is None:
            return None
        doc = self._current(brain, claim.data["doc_id"])
        if doc is None or doc.memory is None or doc.memory.content_hash != digest:
            return None
        return doc

    def _current(self, brain: Brain, memory_id: str) -> Document | None:
        doc = self.documents.repo.get_by_id(memory_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None or doc.memory is None:
            return None
        return doc if doc.memory.current else None

    def update(
        self,
        brain: Brain,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        knowledge_category: str | None = None,
        metadata: Mapping[str, MetadataValue] | None = None,
    ) -> Updated:
        """Change a memory in place (no new version): new text is scrubbed, re-hashed, re-embedded."""
        if content is None and importance is None and knowledge_category is None and metadata is None:
            raise InvalidInput("nothing to update: give content, importance, knowledge_category or metadata")
        doc = self.get(brain, memory_id)
        changed: list[str] = []

        def change(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
            if live is None or live.memory is None or data is None:
                raise NotFound(f"memory not found: {excerpt(memory_id)}")
            facet, text, title = live.memory, data.decode(), live.title
            if content is not None:
                new_text = _checked_text(content)
                if new_text != text:
                    text, title = new_text, _title(new_text)
                    facet = facet.model_copy(update={"content_hash": content_hash(new_text)})
                    changed.extend(["content", "content_hash"])
            if importance is not None and importance != facet.importance:
                facet = facet.model_copy(update={"importance": importance})
                changed.append("importance")
            if knowledge_category is not None and knowledge_category != facet.knowledge_category:
                facet = facet.model_copy(update={"knowledge_category": knowledge_category})
                changed.append("knowledge_category")
            if metadata is not None and dict(metadata) != {
                k: v for k, v in live.metadata.items() if k != "tags"
            }:
                changed.append("metadata")
            if not changed:
                return None
            info = keep_info(live, metadata=metadata, memory=facet)
            return text.encode(), DocumentInput(
                title=title,
                tags=info.tags,
                metadata=info.metadata,
                source=info.source,
                content_type=info.content_type,
                memory=facet,
            )

        outcome = self.documents.modify(brain, doc.path, change)
        if outcome is None:
            return Updated(doc, [])
        updated = outcome.document
        if "content" in changed and updated.memory is not None:
            claim = _claim(brain.id, "hash", updated.memory.type.value, updated.memory.client_id or "global",
                           updated.memory.content_hash or "")  # fmt: skip
            self.records.put(Item(*claim, data={"doc_id": updated.id}))
            if self.entities is not None:
                f = updated.memory
                found = self.entities.extract(
                    self.text(updated), client_id=f.client_id, source_agent=f.source_agent
                )
                self.entities.relink(brain, updated.id, found, updated.updated_at)
        return Updated(updated, changed)

    def delete(self, brain: Brain, memory_id: str, *, reason: str | None = None) -> Deleted:
        """Soft delete; a memory already deleted, superseded or expired is left as it is."""
        doc = self.record(brain, memory_id)
        assert doc.memory is not None
        if doc.deleted_at is not None or not doc.memory.current:
            return Deleted(doc, already_inactive=True)
        gone = self.documents.retire(brain, doc.path, reason=reason, why=reason or "deleted")
        return Deleted(gone, already_inactive=False)

    def expire_events(
        self, brain: Brain, *, ttl_days: int = EVENT_TTL_DAYS, limit: int = EXPIRE_PER_RUN
    ) -> int:
        """Soft-expire events older than `ttl_days` that nobody read, of medium or low importance."""
        now = self.clock.now()
        cutoff = now - timedelta(days=ttl_days)
        stale = [
            doc
            for doc in self.documents.repo.list(brain.id, f"{PREFIX}{MemoryType.event.value}/")
            if doc.deleted_at is None
            and doc.memory is not None
            and doc.memory.current
            and doc.created_at < cutoff
            and (doc.memory.importance if doc.memory.importance is not None else DEFAULT_IMPORTANCE)
            <= DEFAULT_IMPORTANCE
        ]
        unread = self.access_of(brain, [d.id for d in stale])
        expired = 0
        for doc in stale:
            if expired >= limit or unread[doc.id].count > 0:
                continue

            def expire(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
                if live is None or live.memory is None or data is None or not live.memory.current:
                    return None
                return data, keep_info(live, memory=live.memory.model_copy(update={"expired_at": now}))

            if self.documents.modify(brain, doc.path, expire, reason="expired") is not None:
                expired += 1
        return expired

    # -- reads -----------------------------------------------------------------------------

    def record(self, brain: Brain, memory_id: str) -> Document:
        """A memory's record, deleted or not; NotFound when there is no such memory in the brain."""
        doc = self.documents.repo.get_by_id(memory_id)
        if doc is None or doc.brain_id != brain.id or doc.memory is None:
            raise NotFound(f"memory not found: {excerpt(memory_id)}")
        return doc

    def get(self, brain: Brain, memory_id: str) -> Document:
        doc = self.record(brain, memory_id)
        if doc.deleted_at is not None:
            raise NotFound(f"memory not found: {excerpt(memory_id)}")
        return doc

    def text(self, doc: Document) -> str:
        return self.documents.content(doc).decode("utf-8", errors="replace")

    def search(self, brain: Brain, query: str, q: MemoryQuery) -> list[MemoryHit]:
        """Hybrid search with every filter inside the index, ranked by effective score."""
        if not query or not query.strip():
            raise InvalidInput("query must not be empty")
        if q.limit < 1:
            raise InvalidInput("limit must be at least 1")
        facets = tuple(
            (name, values)
            for name, values in (
                ("type", q.types),
                ("client_id", q.client_ids),
                ("source_agent", q.source_agents),
                ("category", q.categories),
                ("knowledge_category", q.knowledge_categories),
            )
            if values
        )
        current_only = not q.include_superseded and q.at_time is None
        flt = ChunkFilter(brain_ids=(brain.id,), facets=facets, valid_at=q.at_time, current_only=current_only)
        pool = max(q.limit * 2, 50)
        hits = self.search_service.chunks_for(query, flt, pool)
        best: dict[str, ChunkHit] = {}
        for hit in hits:
            best.setdefault(hit.chunk.document_id, hit)
        docs = self.documents.repo.get_many_by_id(best)
        live = {
            doc_id: doc
            for doc_id, doc in docs.items()
            if doc.deleted_at is None and (not current_only or doc.memory is None or doc.memory.current)
        }
        access = self.access_of(brain, list(live))
        now = self.clock.now()
        ranked: list[MemoryHit] = []
        for doc_id, doc in live.items():
            hit = best[doc_id]
            score = similarity_score(hit.vector_similarity)
            seen = access[doc_id]
            confidence = effective_confidence(doc.memory, doc.created_at, seen.last, now)
            importance = doc.memory.importance if doc.memory else None
            ranked.append(
                MemoryHit(
                    memory=doc,
                    text=hit.chunk.text,
                    score=None if score is None else round(score, 4),
                    effective_score=effective_score(score, confidence, seen.count, importance),
                    confidence=confidence,
                    access=seen,
                    bm25_rank=hit.bm25_rank,
                    vector_rank=hit.vector_rank,
                )
            )
        ranked.sort(key=lambda h: (-h.effective_score, h.memory.id))
        ranked = ranked[: q.limit]
        if q.count_access and self.access is not None and ranked:
            self.access.saw(brain.id, [h.memory.id for h in ranked])
        return ranked

    def since(self, brain: Brain, since: datetime, *, limit: int) -> list[Document]:
        """Memories created at or after `since` (deleted and superseded ones too), newest first."""
        pk = f"memtime#{brain.id}"
        start = _sortable(since)
        ids: list[str] = []
        after: str | None = None
        while len(ids) < limit:
            page = self.records.query(pk, after=after, limit=min(limit, 500), descending=True)
            fresh = [item for item in page.items if item.sk >= start]
            ids.extend(item.data["doc_id"] for item in fresh)
            if len(fresh) < len(page.items) or page.next_after is None:
                break
            after = page.next_after
        ids = list(dict.fromkeys(ids))  # a restored (upserted) memory has a time item per write
        docs = self.documents.repo.get_many_by_id(ids[:limit])
        return [docs[i] for i in ids[:limit] if i in docs and docs[i].brain_id == brain.id]

    def oldest_first(self, brain: Brain, *, page: int = 500) -> Iterator[Document]:
        """Every stored memory (deleted and superseded ones too) in the order it was stored,
        `page` at a time from the memories-by-time records. A memory stored again under its own
        id (an upsert) comes once, at its first store: later stores are stamped after the
        creation time its document keeps."""
        pk = f"memtime#{brain.id}"
        after: str | None = None
        while True:
            found = self.records.query(pk, after=after, limit=page)
            docs = self.documents.repo.get_many_by_id(item.data["doc_id"] for item in found.items)
            for item in found.items:
                doc = docs.get(item.data["doc_id"])
                if (
                    doc is not None
                    and doc.brain_id == brain.id
                    and item.sk.split("#", 1)[0] <= _sortable(doc.created_at)
                ):
                    yield doc
            if found.next_after is None:
                return
            after = found.next_after

    def count(self, brain: Brain, *, max_age_s: float = COUNT_MAX_AGE_S) -> tuple[int, int]:
        """How many memories the brain holds (deleted ones too) and how many chunks the live ones
        have, as the caller may see them, counted at most `max_age_s` ago: counting reads every
        record, and briefings show the totals on each call."""
        now = time.monotonic()
        key = (brain.id, access.view_of(brain))
        with self._counted_lock:
            cached = self._counted.get(key)
        if cached is not None and now - cached[0] <= max_age_s:
            return cached[1]
        total = chunks = 0
        for doc in self.of_type(brain, list(COUNTED_TYPES)):
            total += 1
            chunks += doc.chunk_count if doc.deleted_at is None else 0
        with self._counted_lock:
            self._counted[key] = (now, (total, chunks))
        return total, chunks

    def of_type(self, brain: Brain, kinds: Sequence[MemoryType]) -> Iterator[Document]:
        """Every stored memory of these types (deleted ones too), in path order."""
        for kind in kinds:
            yield from self.documents.repo.list(brain.id, f"{PREFIX}{kind.value}/")

    def forget_records(self, brain: Brain, doc_ids: set[str]) -> int:
        """Remove the claims (key, subject, text hash) and the by-time entries that name these
        memories (an erasure: their documents are gone); returns how many records went."""
        gone = 0
        for pk in (f"memory#{brain.id}", f"memtime#{brain.id}"):
            doomed = [item for item in all_items(self.records, pk) if item.data.get("doc_id") in doc_ids]
            for item in doomed:
                gone += self.records.delete(item.pk, item.sk)
        with self._counted_lock:
            for key in [k for k in self._counted if k[0] == brain.id]:
                del self._counted[key]
        return gone

    def access_of(self, brain: Brain, doc_ids: list[str]) -> dict[str, Access]:
        """How often and when last each memory was read, in one batch read."""
        if self.access is None or not doc_ids:
            return {doc_id: Access(0, None) for doc_id in doc_ids}
        return self.access.get_many(brain.id, doc_ids)


def _checked(m: MemoryInput) -> str:
    if not isinstance(m.type, MemoryType):
        raise InvalidInput(f"unknown memory type {m.type!r}")
    if m.valid_from is not None and m.valid_to is not None and m.valid_from >= m.valid_to:
        raise InvalidInput("valid_from must be before valid_to")
    if not 0.0 <= m.importance <= 1.0:
        raise InvalidInput("importance must be between 0 and 1")
    return _checked_text(m.content)


def _checked_text(content: str) -> str:
    text = scrub(content.strip())
    if not text:
        raise InvalidInput("content must not be empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"content exceeds {MAX_CONTENT_CHARS} characters (got {len(text)})")
    return text


def _title(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
