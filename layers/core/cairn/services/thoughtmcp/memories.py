"""Sector memories (the ThoughtMCP surface): a user's memories with strength, salience, decay,
waypoint links, composite recall and boolean full-text search.

A memory is a document at `thoughts/<user key>/<memory id>.md` whose memory facet names its user,
session, primary sector, keywords, category, context, importance and salience; keywords and tags
are its chunks' tags (`kw:…`, `tag:…`), so every filter of recall and search runs inside the
index legs. Its bytes carry its id in a front-matter line, so no two memories share a blob and a
hard forget can remove every byte of it. Beside it, the memory's row: one record item per memory
in its user's partition, holding what changes on every read (strength, last access, access count,
reinforcement) and its link statistics, so a read does not rewrite the document:

| item          | pk                               | sk            |
|---------------|----------------------------------|---------------|
| memory row    | `thoughts#<brain>#<user key>`    | `<memory id>` |
| waypoint link | the keyed links of services/links/repository.py, kind = link type, both ways |

The user key is a digest of the userId, so a userId never becomes a path or key unescaped, and a
user's partition holds only their memories: a query of one user's memories cannot reach
another's. Scores, decay and link weights: services/thoughtmcp/thought_scoring.py.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np

from cairn.auth import access
from cairn.domain.boolean_query import And, BoolQuery, Term, positive_terms
from cairn.domain.errors import CairnError, Conflict, InvalidInput
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, Link, MemoryFacet, MemoryType
from cairn.domain.stopwords import KEYWORDS as _STOP
from cairn.ports.chunks import ChunkFilter, ChunkIndex, ChunkQuery
from cairn.ports.clock import Clock
from cairn.ports.embedder import Embedder
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.brains import MAX_SLUG, BrainService, slugify
from cairn.services.documents.indexing import chunk_id, owner_token
from cairn.services.documents.inputs import DocumentInput
from cairn.services.documents.service import DocumentService
from cairn.services.links.repository import LinkRepository
from cairn.services.repositories import all_items
from cairn.services.thoughtmcp import thought_scoring as ts
from cairn.services.thoughtmcp.reasoning.context import RelevantMemory

MIN_CONTENT: Final = 10
MAX_CONTENT: Final = 100_000
MAX_LIMIT: Final = 100
DEFAULT_MIN_STRENGTH: Final = 0.01
DEFAULT_MIN_SIMILARITY: Final = 0.5
WAYPOINT_CANDIDATES: Final = 100
MAX_CONNECTIONS: Final = 1  # ThoughtMCP: 3 links per node, bidirectional, so one connection
ROW_CONTENT_CHARS: Final = 4000  # kept in the row too, so a recall reads no blob
POOL: Final = 500
ROWS_TTL_S: Final = 300.0  # a kept user's rows are read afresh at least this often (other writers)
AUTO_KEYWORDS: Final = 8
FOLDER: Final = "thoughts"
LINK_KINDS: Final = ("semantic", "temporal", "causal", "analogical")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
SOURCE_AGENT: Final = "thoughtmcp"


class ThoughtError(CairnError):
    """A failure ThoughtMCP reports as `{success: false, error, suggestion}` (not an exception)."""

    code = "thought_error"

    def __init__(
        self,
        message: str,
        suggestion: str | None = None,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.suggestion = suggestion
        self.error_code = code
        self.details = details


NOT_FOUND_SUGGESTION: Final = "Check that memoryId is correct and belongs to the specified userId"
SECTOR_SUGGESTION: Final = "Use one of: " + ", ".join(ts.SECTORS)


@dataclass(frozen=True)
class Metadata:
    keywords: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    category: str | None = None
    context: str | None = None
    importance: float | None = None


@dataclass(frozen=True)
class NewMemory:
    content: str
    user_id: str
    session_id: str
    sector: str
    metadata: Metadata = field(default_factory=Metadata)


@dataclass(frozen=True)
class Filters:
    sectors: tuple[str, ...] = ()
    primary_sector: str | None = None
    min_strength: float | None = None
    min_salience: float | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    category: str | None = None


@dataclass
class Row:
    """A memory's row (see the module docstring)."""

    id: str
    user_id: str
    session_id: str
    sector: str
    created_at: datetime
    last_access: datetime
    reinforced_at: datetime | None
    access_count: int
    strength: float
    salience: float
    importance: float | None
    category: str | None
    context: str | None
    keywords: list[str]
    tags: list[str]
    link_sum: float
    link_count: int
    content: str | None
    path: str
    version: int = 0

    @property
    def link_weight(self) -> float:
        return self.link_sum / self.link_count if self.link_count else 0.0

    def data(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "sector": self.sector,
            "created_at": self.created_at.isoformat(),
            "last_access": self.last_access.isoformat(),
            "reinforced_at": self.reinforced_at.isoformat() if self.reinforced_at else None,
            "access_count": self.access_count,
            "strength": self.strength,
            "salience": self.salience,
            "importance": self.importance,
            "category": self.category,
            "context": self.context,
            "keywords": self.keywords,
            "tags": self.tags,
            "link_sum": self.link_sum,
            "link_count": self.link_count,
            "content": self.content,
            "path": self.path,
        }


@dataclass(frozen=True)
class Recalled:
    row: Row
    content: str
    strength: float
    score: ts.Score


class ThoughtMemories:
    def __init__(
        self,
        documents: DocumentService,
        records: RecordStore,
        chunks: ChunkIndex,
        embedder: Embedder,
        clock: Clock,
        *,
        keep_rows: bool = False,
    ) -> None:
        """`keep_rows`: this process is the store's only writer (the embedded store), so each
        user's rows may be kept between calls (see `_all_rows`)."""
        self.documents = documents
        self.records = records
        self.chunks = chunks
        self.embedder = embedder
        self.clock = clock
        self.links = LinkRepository(records)
        self._kept: dict[str, tuple[float, dict[str, Row], set[str]]] | None = {} if keep_rows else None
        self._kept_lock = threading.Lock()

    # -- remember ----------------------------------------------------------------------------

    def remember(self, brain: Brain, m: NewMemory) -> dict[str, Any]:
        check_user(m.user_id, brain)
        check_content(m.content)
        check_sector(m.sector)
        if not m.session_id.strip():
            raise ThoughtError("sessionId is required", "Provide the session the memory belongs to")
        check_metadata(m.metadata)
        now = self.clock.now()
        keywords = list(m.metadata.keywords) if m.metadata.keywords is not None else auto_keywords(m.content)
        memory_id = new_id("mem")
        row = Row(
            id=memory_id,
            user_id=m.user_id,
            session_id=m.session_id,
            sector=m.sector,
            created_at=now,
            last_access=now,
            reinforced_at=None,
            access_count=0,
            strength=1.0,
            salience=ts.initial_salience(m.content, m.metadata.importance),
            importance=m.metadata.importance,
            category=m.metadata.category,
            context=m.metadata.context,
            keywords=keywords,
            tags=list(m.metadata.tags or ()),
            link_sum=0.0,
            link_count=0,
            content=m.content if len(m.content) <= ROW_CONTENT_CHARS else None,
            path=memory_path(m.user_id, memory_id),
        )
        doc = self._write(brain, row, m.content, created=True)
        links = self._link(brain, row)
        return {
            "memoryId": row.id,
            "embeddingsGenerated": doc.chunk_count,
            "linksCreated": links,
            "salience": round(row.salience, 6),
            "strength": row.strength,
        }

    def _write(
        self, brain: Brain, row: Row, content: str, *, created: bool, forgotten: datetime | None = None
    ) -> Document:
        """The memory's document and its row, in one transaction (a new row, or at its version);
        `forgotten`: when it was soft-forgotten (its chunks then hidden from current-only search)."""
        item = Item(_pk(brain.id, row.user_id), row.id, row.data())
        ops = [Put(item, 0 if created else row.version)]
        info = DocumentInput(
            title=_title(content),
            tags=[*(f"kw:{k}" for k in row.keywords), *(f"tag:{t}" for t in row.tags)],
            memory=self._facet(row, forgotten=forgotten),
            doc_id=row.id,
            source=_SOURCE,
            content_type="text/markdown",
        )
        doc = self.documents.write(brain, row.path, _stored(row.id, content), info, also=ops).document
        self._touched(brain.id, row.user_id, row.id)
        return doc

    def _facet(self, row: Row, *, forgotten: datetime | None = None) -> MemoryFacet:
        return MemoryFacet(
            type=MemoryType.note,
            sector=row.sector,
            strength=row.strength,
            salience=row.salience,
            importance=row.importance,
            category=row.category,
            source_agent=SOURCE_AGENT,
            user_id=row.user_id,
            session_id=row.session_id,
            keywords=row.keywords,
            context=row.context,
            last_access=row.last_access,
            access_count=row.access_count,
            expired_at=forgotten,
        )

    # -- waypoint links ----------------------------------------------------------------------

    def _link(self, brain: Brain, row: Row) -> int:
        """Link the memory to its most similar recent memories of the same user (at most
        MAX_CONNECTIONS connections, both ways, weight >= the threshold); returns links made."""
        others = [r for r in self._newest(brain.id, row.user_id, WAYPOINT_CANDIDATES + 1) if r.id != row.id]
        others = others[:WAYPOINT_CANDIDATES]
        if not others:
            return 0
        ids = [chunk_id(row.id, 0), *(chunk_id(r.id, 0) for r in others)]
        vectors = self.chunks.get_vectors(brain.id, ids)
        mine = vectors.get(ids[0])
        if mine is None:
            return 0
        side = _side(row)
        scored: list[tuple[float, Row]] = []
        for other in others:
            theirs = vectors.get(chunk_id(other.id, 0))
            if theirs is None or other.strength <= 0:
                continue
            cosine = float(np.dot(np.asarray(mine).ravel(), np.asarray(theirs).ravel()))
            weight = ts.waypoint_weight(cosine, side, _side(other))
            if weight >= ts.WAYPOINT_THRESHOLD:
                scored.append((weight, other))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        made = 0
        for weight, other in scored[:MAX_CONNECTIONS]:
            made += self._connect(brain, row, other, weight, ts.link_type(side, _side(other)))
        return made

    def _connect(self, brain: Brain, a: Row, b: Row, weight: float, kind: str) -> int:
        now = self.clock.now()
        weight = round(weight, 6)  # as the links store it, so the statistics add up exactly
        for _ in range(8):
            rows = self._rows(brain.id, a.user_id, [a.id, b.id])
            if a.id not in rows or b.id not in rows:
                return 0
            ops: list[Put | Delete] = []
            for src, dst in ((a.id, b.id), (b.id, a.id)):
                link = Link(id=new_id("lnk"), brain_id=brain.id, source_id=src, target_id=dst, kind=kind,
                            weight=weight, created_at=now)  # fmt: skip
                ops += self.links.add_ops(link)
            for r in (rows[a.id], rows[b.id]):
                r.link_sum += 2 * weight  # both directions touch each end
                r.link_count += 2
                ops.append(Put(Item(_pk(brain.id, r.user_id), r.id, r.data()), r.version))
            try:
                self.records.transact(ops)
            except Conflict:
                continue  # a row moved (a read reinforced it) or the link exists: read again
            self._touched(brain.id, a.user_id, a.id, b.id)
            return 2
        return 0

    def _unlink(self, brain: Brain, row: Row) -> int:
        """Remove every waypoint link of the memory, both ways, and the other ends' statistics."""
        removed = 0
        for kind in LINK_KINDS:
            for link in self.links.outgoing(brain.id, row.id, kind):
                for _ in range(8):
                    other = self._rows(brain.id, row.user_id, [link.target_id]).get(link.target_id)
                    ops = [
                        *self.links.remove_ops(brain.id, row.id, kind, link.target_id),
                        *self.links.remove_ops(brain.id, link.target_id, kind, row.id),
                    ]
                    if other is not None:
                        other.link_count = max(0, other.link_count - 2)
                        other.link_sum = (
                            max(0.0, other.link_sum - 2 * link.weight) if other.link_count else 0.0
                        )
                        ops.append(
                            Put(Item(_pk(brain.id, other.user_id), other.id, other.data()), other.version)
                        )
                    try:
                        self.records.transact(ops)
                    except Conflict:
                        continue
                    self._touched(brain.id, row.user_id, row.id, link.target_id)
                    removed += 1
                    break
        return removed

    # -- recall ------------------------------------------------------------------------------

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
        similarities: dict[str, float] | None = None
        if text is not None and text.strip():
            similarities = self._similar(brain, user_id, text, filters, min_similarity)
            if not similarities:  # ThoughtMCP: no memory close enough, every memory passes at 0
                similarities = {}
                rows = self._filtered(self._all_rows(brain.id, user_id), filters, now)
                found = [self._recalled(r, 0.0, now) for r in rows]
            else:
                rows = self._filtered(self._rows_of(brain.id, user_id, similarities), filters, now)
                found = [self._recalled(r, similarities[r.id], now) for r in rows]
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

    def _similar(
        self, brain: Brain, user_id: str, text: str, filters: Filters, min_similarity: float
    ) -> dict[str, float]:
        vector = self.embedder.embed([text])[0].tolist()
        hits = self.chunks.search(
            ChunkQuery(
                "",
                vector,
                self._chunk_filter(brain, user_id, filters),
                top_k=POOL,
                candidate_pool=POOL,
                bm25_weight=0.0,
            )
        )
        best: dict[str, float] = {}
        for hit in hits:
            similarity = hit.vector_similarity if hit.vector_similarity is not None else 0.0
            if similarity >= min_similarity:
                best[hit.chunk.document_id] = max(best.get(hit.chunk.document_id, 0.0), similarity)
        return best

    def _chunk_filter(self, brain: Brain, user_id: str, filters: Filters) -> ChunkFilter:
        facets: list[tuple[str, tuple[str, ...]]] = [("user_id", (user_id,))]
        sectors = set(filters.sectors)
        if filters.primary_sector is not None:
            sectors = {filters.primary_sector} if not sectors or filters.primary_sector in sectors else {"-"}
        if sectors:
            facets.append(("sector", tuple(sorted(sectors))))
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
            created_from=filters.date_from,
            created_to=filters.date_to,
            current_only=hidden,  # a soft-forgotten memory is hidden unless minStrength is 0
        )

    def _filtered(self, rows: Iterable[Row], f: Filters, now: datetime) -> list[Row]:
        """The rows every filter admits (the index already applied them to candidates it found;
        rows read from the user's partition are filtered here), strength decayed to now."""
        min_strength = f.min_strength if f.min_strength is not None else DEFAULT_MIN_STRENGTH
        out = []
        for r in rows:
            if f.sectors and r.sector not in f.sectors:
                continue
            if f.primary_sector is not None and r.sector != f.primary_sector:
                continue
            if ts.decayed(r.strength, r.sector, r.last_access, now) < min_strength:
                continue
            if f.min_salience is not None and r.salience < f.min_salience:
                continue
            if f.date_from is not None and r.created_at < f.date_from:
                continue
            if f.date_to is not None and r.created_at >= f.date_to:
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
        out = []
        for found in page:
            if found.row.content is None:  # a long memory: its text is in the blob store only
                text = _unstored(self.documents.read(brain, found.row.path))
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
                    self.records.put(Item(_pk(brain.id, user), row.id, fresh.data()), fresh.version)
                    break
                except Conflict:
                    fresh = self._rows(brain.id, user, [row.id]).get(row.id)  # moved meanwhile: again
        self._touched(brain.id, user, *(r.id for r in rows))

    # -- full-text search --------------------------------------------------------------------

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
        contents = self._with_content(brain, [f for f, _ in page])
        return list(zip(contents, [rank for _, rank in page], strict=True)), len(found)

    # -- update, forget ----------------------------------------------------------------------

    def update(
        self,
        brain: Brain,
        memory_id: str,
        user_id: str,
        *,
        content: str | None = None,
        strength: float | None = None,
        salience: float | None = None,
        metadata: Metadata | None = None,
    ) -> dict[str, Any]:
        check_user(user_id, brain)
        if content is None and strength is None and salience is None and metadata is None:
            raise ThoughtError("No fields to update", "Provide content, strength, salience or metadata")
        if content is not None:
            check_content(content)
        for name, value in (("strength", strength), ("salience", salience)):
            if value is not None and not 0 <= value <= 1:
                raise ThoughtError(f"{name.capitalize()} must be between 0 and 1", f"Give {name} in 0..1")
        if metadata is not None:
            check_metadata(metadata)
        for _ in range(_UPDATE_TRIES):
            try:
                return self._update_once(brain, memory_id, user_id, content, strength, salience, metadata)
            except Conflict:
                continue  # another update of it landed first: apply this one on top of it
        raise ThoughtError(
            "Memory kept changing while it was being updated", "Try the update again", code="CONFLICT"
        )

    def _update_once(
        self,
        brain: Brain,
        memory_id: str,
        user_id: str,
        content: str | None,
        strength: float | None,
        salience: float | None,
        metadata: Metadata | None,
    ) -> dict[str, Any]:
        row = self._owned(brain, memory_id, user_id)
        before = _stored(row.id, self._content(brain, row))
        text = content if content is not None else _unstored(before)
        if strength is not None:
            row.strength = strength
        if salience is not None:
            row.salience = salience
        if metadata is not None:
            row.keywords = list(metadata.keywords) if metadata.keywords is not None else row.keywords
            row.tags = list(metadata.tags) if metadata.tags is not None else row.tags
            row.category = metadata.category if metadata.category is not None else row.category
            row.context = metadata.context if metadata.context is not None else row.context
            row.importance = metadata.importance if metadata.importance is not None else row.importance
        changed = content is not None and content != _unstored(before)
        if content is not None:
            row.content = content if len(content) <= ROW_CONTENT_CHARS else None
        old_blob = self.documents.get(brain, row.path).blob_key
        doc = self._write(brain, row, text, created=False)
        connections = 0
        if changed:
            if doc.blob_key != old_blob:
                self.documents.blobs.delete(old_blob)  # this memory's alone: its id is in its bytes
            connections = self._unlink(brain, self._owned(brain, memory_id, user_id))
            connections += self._link(brain, self._owned(brain, memory_id, user_id))
        return {
            "memoryId": row.id,
            "embeddingsRegenerated": changed,
            "connectionsUpdated": connections,
            "strength": round(row.strength, 6),
            "salience": round(row.salience, 6),
        }

    def forget(
        self, brain: Brain, memory_id: str, user_id: str | None, *, soft: bool = False
    ) -> dict[str, Any]:
        """Soft: strength 0, kept (hidden from recall and search unless minStrength is 0). Hard:
        the document, its chunks and blob, its links both ways and its row, all removed."""
        if user_id is not None:
            check_user(user_id, brain)
        row = self._owned(brain, memory_id, user_id, combined=True)
        if soft:
            row.strength = 0.0
            self._write(brain, row, self._content(brain, row), created=False, forgotten=self.clock.now())
            return {
                "memoryId": row.id,
                "deletionType": "soft",
                "message": "Memory strength set to 0, data preserved",
            }
        self._unlink(brain, row)
        current = self._rows(brain.id, row.user_id, [row.id]).get(row.id)
        also = (
            [Delete(_pk(brain.id, row.user_id), row.id, expected_version=current.version)] if current else []
        )
        self.documents.erase(brain, row.path, also=also, reason="forget")
        self._touched(brain.id, row.user_id, row.id)
        return {"memoryId": row.id, "deletionType": "hard", "message": "Memory and all related data removed"}

    def adopt(self, brain: Brain, doc: Document) -> bool:
        """Give a restored memory document (an archive's: services/archive.py) its row, from its
        facet and tags, and link it again; False when it has its row already."""
        memory = doc.memory
        if memory is None or memory.user_id is None or doc.deleted_at is not None:
            return False
        if self._rows(brain.id, memory.user_id, [doc.id]):
            return False
        text = _unstored(self.documents.content(doc))
        tags = [t.removeprefix("tag:") for t in doc.tags if t.startswith("tag:")]
        row = Row(
            id=doc.id,
            user_id=memory.user_id,
            session_id=memory.session_id or "",
            sector=memory.sector or "semantic",
            created_at=doc.created_at,
            last_access=memory.last_access or doc.created_at,
            reinforced_at=None,
            access_count=memory.access_count,
            strength=0.0
            if memory.expired_at is not None
            else (memory.strength if memory.strength is not None else 1.0),
            salience=memory.salience
            if memory.salience is not None
            else ts.initial_salience(text, memory.importance),
            importance=memory.importance,
            category=memory.category,
            context=memory.context,
            keywords=list(memory.keywords or []),
            tags=tags,
            link_sum=0.0,
            link_count=0,
            content=text if len(text) <= ROW_CONTENT_CHARS else None,
            path=doc.path,
        )
        try:
            self.records.put(Item(_pk(brain.id, row.user_id), row.id, row.data()), 0)
        except Conflict:
            return False
        self._touched(brain.id, row.user_id, row.id)
        self._link(brain, row)
        return True

    def forget_user(self, brain: Brain, user_id: str) -> int:
        """Remove every row of the user (an erasure: their memories' documents go on their own);
        returns how many."""
        pk = _pk(brain.id, user_id)
        gone = sum(self.records.delete(item.pk, item.sk) for item in list(all_items(self.records, pk)))
        if self._kept is not None:
            with self._kept_lock:
                self._kept.pop(pk, None)
        return gone

    # -- batches, lookups --------------------------------------------------------------------

    def get_many(self, brain: Brain, user_id: str, memory_ids: Sequence[str]) -> dict[str, Recalled]:
        check_user(user_id, brain)
        now = self.clock.now()
        rows = self._rows(brain.id, user_id, list(memory_ids))
        found = self._with_content(brain, [self._recalled(r, None, now) for r in rows.values()])
        return {f.row.id: f for f in found}

    def owner_of(self, brain: Brain, memory_id: str) -> str | None:
        doc = self.documents.repo.get_by_id(memory_id) if isinstance(memory_id, str) and memory_id else None
        if doc is None or doc.brain_id != brain.id or doc.memory is None or doc.deleted_at is not None:
            return None
        return doc.memory.user_id

    def _owned(self, brain: Brain, memory_id: str, user_id: str | None, *, combined: bool = False) -> Row:
        owner = self.owner_of(brain, memory_id)
        if owner is None:
            raise ThoughtError(
                "Memory not found or does not belong to user" if combined else "Memory not found",
                NOT_FOUND_SUGGESTION,
            )
        if user_id is None:
            check_user(owner, brain)
        elif owner != user_id:
            raise ThoughtError(
                "Memory not found or does not belong to user"
                if combined
                else "Memory does not belong to user",
                NOT_FOUND_SUGGESTION,
            )
        row = self._rows(brain.id, owner, [memory_id]).get(memory_id)
        if row is None:
            raise ThoughtError("Memory not found", NOT_FOUND_SUGGESTION)
        return row

    def _content(self, brain: Brain, row: Row) -> str:
        return row.content if row.content is not None else _unstored(self.documents.read(brain, row.path))

    def _rows(self, brain_id: str, user_id: str, ids: Sequence[str]) -> dict[str, Row]:
        pk = _pk(brain_id, user_id)
        items = self.records.get_many([(pk, i) for i in dict.fromkeys(ids) if isinstance(i, str) and i])
        return {item.sk: _row(item) for item in items.values()}

    def _all_rows(self, brain_id: str, user_id: str) -> list[Row]:
        """Every row of the user. Kept per user where this process is the store's only writer:
        a row this process writes is marked and read again (one batch) before the next use, so
        the kept rows are what the store holds; they are read afresh after ROWS_TTL_S anyway."""
        if self._kept is None:
            return self._read_rows(brain_id, user_id)
        pk = _pk(brain_id, user_id)
        with self._kept_lock:
            held = self._kept.get(pk)
        if held is None or time.monotonic() - held[0] > ROWS_TTL_S:
            started = time.monotonic()
            rows = {r.id: r for r in self._read_rows(brain_id, user_id)}
            with self._kept_lock:
                self._kept[pk] = (started, rows, set())
            return list(rows.values())
        with self._kept_lock:
            stale = set(held[2])
            held[2].clear()
        if stale:
            fresh = self._rows(brain_id, user_id, sorted(stale))
            with self._kept_lock:
                for memory_id in stale:
                    if memory_id in fresh:
                        held[1][memory_id] = fresh[memory_id]
                    else:
                        held[1].pop(memory_id, None)  # forgotten
        with self._kept_lock:
            return list(held[1].values())

    def _rows_of(self, brain_id: str, user_id: str, ids: Iterable[str]) -> list[Row]:
        """The rows of these memories of the user, for ranking (from the kept rows when there
        are any; a writer reads its rows from the store itself)."""
        if self._kept is not None and _pk(brain_id, user_id) in self._kept:
            kept = {r.id: r for r in self._all_rows(brain_id, user_id)}
            return [kept[i] for i in ids if i in kept]
        return list(self._rows(brain_id, user_id, list(ids)).values())

    def _touched(self, brain_id: str, user_id: str, *memory_ids: str) -> None:
        """Rows this process just wrote: a kept copy of them is read again before its next use."""
        if self._kept is None:
            return
        with self._kept_lock:
            held = self._kept.get(_pk(brain_id, user_id))
            if held is not None:
                held[2].update(memory_ids)

    def _read_rows(self, brain_id: str, user_id: str) -> list[Row]:
        return [_row(item) for item in all_items(self.records, _pk(brain_id, user_id))]

    def _newest(self, brain_id: str, user_id: str, count: int) -> list[Row]:
        page = self.records.query(
            _pk(brain_id, user_id), limit=count, descending=True
        )  # ids are time-ordered
        return [_row(item) for item in page.items]


# -- validation and authorization -------------------------------------------------------------


def check_user_id(user_id: str) -> None:
    """A userId is given and at most 256 characters (what the caller may do with it is the access
    rule's: check_user)."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise ThoughtError("userId is required", "Provide the userId the memories belong to")
    if len(user_id) > 256:
        raise ThoughtError("userId must be at most 256 characters", "Use a shorter userId")


def check_user(user_id: str, brain: Brain | None = None) -> None:
    """A valid userId the caller acts for (auth/access.py `acts_for`) in `brain`, or in a brain of
    its own tenant when there is none yet."""
    check_user_id(user_id)
    access.check_acts_for(brain, user_id)


def check_content(content: str) -> None:
    size = len(content) if isinstance(content, str) else 0
    if size < MIN_CONTENT:
        raise ThoughtError(
            f"Content length {size} is below minimum. Allowed range: {MIN_CONTENT}-{MAX_CONTENT} characters",
            f"Content must be between {MIN_CONTENT} and {MAX_CONTENT} characters. Current length: {size}",
            code="CONTENT_TOO_SHORT",
            details=_length_details(size),
        )
    if size > MAX_CONTENT:
        raise ThoughtError(
            f"Content length {size} exceeds maximum. Allowed range: {MIN_CONTENT}-{MAX_CONTENT} characters",
            f"Content must be between {MIN_CONTENT} and {MAX_CONTENT} characters. Current length: {size}",
            code="CONTENT_TOO_LONG",
            details=_length_details(size),
        )
    if not content.strip():
        raise ThoughtError("Content cannot be empty", "Provide non-empty content")


def _length_details(size: int) -> dict[str, Any]:
    return {
        "actualLength": size,
        "minLength": MIN_CONTENT,
        "maxLength": MAX_CONTENT,
        "allowedRange": f"{MIN_CONTENT}-{MAX_CONTENT} characters",
    }


def check_sector(sector: str | None) -> None:
    if sector not in ts.SECTORS:
        raise ThoughtError("Invalid memory sector", SECTOR_SUGGESTION)


def check_metadata(m: Metadata) -> None:
    if m.importance is not None and not 0 <= m.importance <= 1:
        raise ThoughtError("Importance must be between 0 and 1", "Give importance in 0..1")
    for name, values in (("keywords", m.keywords), ("tags", m.tags)):
        if values is not None and (len(values) > 50 or any(not v.strip() or len(v) > 100 for v in values)):
            raise ThoughtError(
                f"metadata.{name} must be at most 50 non-empty strings of at most 100 characters"
            )


def check_filters(f: Filters) -> None:
    for sector in (*f.sectors, *([f.primary_sector] if f.primary_sector else [])):
        check_sector(sector)
    for name, value in (("minStrength", f.min_strength), ("minSalience", f.min_salience)):
        if value is not None and not 0 <= value <= 1:
            raise ThoughtError(f"{name} must be between 0 and 1", f"Give {name} in 0..1")
    if f.date_from is not None and f.date_to is not None and f.date_to < f.date_from:
        raise ThoughtError("dateRange.end must be >= dateRange.start", "Swap or correct the dates")


def auto_keywords(content: str) -> list[str]:
    """The content's most frequent words of three letters or more that are not stopwords."""
    words = [w.lower().strip("'-") for w in _WORD.findall(content)]
    counted = Counter(w for w in words if w not in _STOP and len(w) >= 3)
    return [
        w for w, _ in sorted(counted.items(), key=lambda kv: (-kv[1], words.index(kv[0])))[:AUTO_KEYWORDS]
    ]


# -- records ------------------------------------------------------------------------------------

_SOURCE = DocumentInput().source


def user_key(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def user_folder(user_id: str) -> str:
    return f"{FOLDER}/u{user_key(user_id)[:24]}/"


def memory_path(user_id: str, memory_id: str) -> str:
    return f"{user_folder(user_id)}{memory_id}.md"


def _pk(brain_id: str, user_id: str) -> str:
    return f"thoughts#{brain_id}#{user_key(user_id)}"


def _stored(memory_id: str, content: str) -> bytes:
    """A memory's bytes: its id in a front-matter line (so its blob is its own), then its text."""
    return f"---\nmemory: {memory_id}\n---\n{content}".encode()


def _unstored(data: bytes) -> str:
    text = data.decode("utf-8")
    if text.startswith("---\nmemory: "):
        return text.split("\n---\n", 1)[1]
    return text


def _title(content: str) -> str:
    first = " ".join(content.split())
    return first[:80] + ("…" if len(first) > 80 else "")


def _side(row: Row) -> ts.WaypointSide:
    return ts.WaypointSide(row.session_id, row.created_at, row.salience, row.keywords, row.tags, row.category)


def _row(item: Item) -> Row:
    d = item.data
    created = datetime.fromisoformat(d["created_at"])
    last, reinforced = d.get("last_access"), d.get("reinforced_at")
    return Row(
        item.sk,
        d["user_id"],
        d.get("session_id") or "",
        d["sector"],
        created,
        datetime.fromisoformat(last) if last else created,
        datetime.fromisoformat(reinforced) if reinforced else None,
        d.get("access_count") or 0,
        d["strength"],
        d["salience"],
        d.get("importance"),
        d.get("category"),
        d.get("context"),
        d.get("keywords") or [],
        d.get("tags") or [],
        d.get("link_sum") or 0.0,
        d.get("link_count") or 0,
        d.get("content"),
        d["path"],
        item.version,
    )


def wire_memory(found: Recalled, *, with_access: bool = True) -> dict[str, Any]:
    """A memory as recall answers it (score added by the caller)."""
    r = found.row
    out: dict[str, Any] = {
        "id": r.id,
        "content": found.content,
        "createdAt": _iso(r.created_at),
    }
    if with_access:
        out["lastAccessed"] = _iso(r.last_access)
    out.update(
        strength=round(found.strength, 6),
        salience=round(r.salience, 6),
        primarySector=r.sector,
        metadata={
            "keywords": r.keywords,
            "tags": r.tags,
            "category": r.category,
            "context": r.context,
            "importance": r.importance,
        },
    )
    return out


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def parse_moment(value: str, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{name} must be an ISO 8601 date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


# -- the brain, and memories as reasoning context ------------------------------------------------

DEFAULT_BRAIN_NAME: Final = "ThoughtMCP"
_UPDATE_TRIES: Final = 16
BRAIN_MARK: Final = "thoughtmcp_brain"
"""Brain metadata marking the brain a tenant's ThoughtMCP memories live in when none is configured."""


def thought_brain(
    brains: BrainService, ref: str | None, *, user_id: str | None = None, create: bool = False
) -> Brain | None:
    """The brain ThoughtMCP's memories live in: `ref` (CAIRN_THOUGHTMCP_BRAIN), else the caller's
    tenant's brain marked as ThoughtMCP's, never another library (a first write makes one, named
    ThoughtMCP); None for a read before it exists. With `user_id`, for a call about that user's
    memories: refused (check_user) unless the caller acts for the user there, before anything is made."""
    if user_id is not None:
        check_user_id(user_id)
    brain = brains.resolve(ref) if ref else _marked(brains)
    if user_id is not None:
        check_user(user_id, brain)
    if brain is not None or not create:
        return brain
    tenant, _ = access.creator()
    slug = "thoughtmcp" if tenant == access.LOCAL_TENANT else f"thoughtmcp-{slugify(tenant)}"[:MAX_SLUG]
    try:
        return brains.create(DEFAULT_BRAIN_NAME, slug=slug, visibility="tenant", metadata={BRAIN_MARK: True})
    except Conflict:  # made meanwhile by another first write, or the slug is someone else's
        return _marked(brains) or brains.create(
            DEFAULT_BRAIN_NAME, visibility="tenant", metadata={BRAIN_MARK: True}
        )


def _marked(brains: BrainService) -> Brain | None:
    return next((b for b in access.defaults(brains.list()) if b.metadata.get(BRAIN_MARK) is True), None)


class ThoughtContext:
    """MemoryContext (services/thoughtmcp/reasoning/context.py): a user's memories most relevant to a problem,
    by composite recall; reading them as context is not an access (no reinforcement)."""

    def __init__(self, thoughts: ThoughtMemories, brains: BrainService, ref: str | None) -> None:
        self.thoughts = thoughts
        self.brains = brains
        self.ref = ref

    def relevant(self, user_id: str, text: str, limit: int) -> list[RelevantMemory]:
        brain = thought_brain(self.brains, self.ref, user_id=user_id)
        if brain is None:
            return []
        found, _ = self.thoughts.recall(
            brain, user_id, text=text, filters=Filters(), limit=limit, min_similarity=0.0, reinforce=False
        )
        return [RelevantMemory(f.row.id, f.content, f.row.sector, round(f.score.total, 6)) for f in found]
