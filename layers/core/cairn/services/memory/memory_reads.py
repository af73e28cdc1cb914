"""Reading typed memories: by id, search (hybrid, filtered by type, validity, client), since a time,
oldest first, counts (from the records' raw data: memory_glance.py), and how often each was read."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from cairn.auth import access
from cairn.domain.errors import InvalidInput, NotFound, Unavailable
from cairn.domain.models import Brain, Document, MemoryType
from cairn.domain.text import excerpt, query_read
from cairn.ports.chunks import ChunkFilter, ChunkHit
from cairn.ports.clock import Clock
from cairn.ports.records import Item
from cairn.services.documents.current_memories import may_be_current
from cairn.services.documents.memory_counts import DAMAGED, Bucket, built_owners, owner_of, times_done
from cairn.services.documents.memory_times import Made, made
from cairn.services.documents.service import DocumentService
from cairn.services.documents.unreadable import Unreadable, read_or_skip
from cairn.services.memory.claims import MemoryClaims
from cairn.services.memory.entities import EntityService
from cairn.services.memory.memory_glance import Glance
from cairn.services.memory.memory_model import (
    COUNT_MAX_AGE_S,
    COUNTED_TYPES,
    PREFIX,
    Containing,
    MemoryHit,
    MemoryQuery,
)
from cairn.services.memory.memory_ranking import effective_confidence, effective_score, read_rank
from cairn.services.memory.mention_links import MentionLinks
from cairn.services.repositories import document_of, documents_pk
from cairn.services.search.access import Access, AccessLog
from cairn.services.search.as_of import DEEPEST, AsOf, one_per_line
from cairn.services.search.identifiers import ABOUT, asked
from cairn.services.search.relevance import GOOD_MATCH, Judged, blend, judge, naming
from cairn.services.search.service import NEAREST, SearchService


class MemoryReads:
    """The read side of MemoryService (memories.py)."""

    def __init__(
        self,
        documents: DocumentService,
        claims: MemoryClaims,
        search: SearchService,
        clock: Clock,
        access: AccessLog | None = None,
        *,
        entities: EntityService | None = None,
        mention_links: MentionLinks | None = None,
    ) -> None:
        self.entities = entities
        """Entity extraction and links (services/memory/entities.py); None: none kept."""
        self.mention_links = mention_links
        """A memory's entity links made at store time, marked pending in its commit
        (services/memory/mention_links.py); None: none made."""
        self._counted: dict[tuple[str, str | None], tuple[float, tuple[int, int]]] = {}
        self._counted_lock = threading.Lock()
        self.documents = documents
        self.claims = claims
        self.search_service = search
        self.clock = clock
        self.access = access

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

    def text_or_none(self, doc: Document, skipped: list[Unreadable] | None = None) -> str | None:
        """The memory's text for an answer about many: None when its stored content is damaged
        (logged, and added to `skipped`: services/documents/unreadable.py)."""
        return read_or_skip(doc, self.text, skipped)

    def search(self, brain: Brain, query: str, q: MemoryQuery) -> list[MemoryHit]:
        """Hybrid search with every filter inside the index, ranked by effective score. Whether a
        query of whitespace only is empty is its surface's rule, checked there before (zengram's:
        JavaScript's `trim()`, under which U+001C is text): here only an empty query is refused."""
        if not query:
            raise InvalidInput("query must not be empty")
        if q.limit < 1:
            raise InvalidInput("limit must be at least 1")
        query = query_read(query)
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
        as_of = AsOf(q.at_time, q.known_at, q.include_superseded)
        current_only = not q.include_superseded and not as_of.travels
        flt = as_of.narrowed(ChunkFilter(brain_ids=(brain.id,), facets=facets, current_only=current_only))
        pool = max(q.limit * 2, 50)
        vector = self.search_service.embedder.embed([query])[0].tolist()
        while True:
            hits = self.search_service.chunks_for(query, flt, pool, vector=vector, nearest=NEAREST)
            best = self._best(hits, vector)
            docs = self.documents.repo.get_many_by_id(best)
            live = {
                doc_id: as_of.as_held(doc)
                for doc_id, doc in docs.items()
                if doc.deleted_at is None
                and (not current_only or doc.memory is None or doc.memory.current)
                and as_of.holds(doc)
            }
            # What was current at known_at is judged here, not in the index: when too few of the
            # hits pass, look deeper until enough do or the index holds no more.
            if q.known_at is None or len(live) >= q.limit or len(hits) < pool or pool >= DEEPEST:
                break
            pool *= 4
        if q.at_time is not None:
            live = one_per_line(live)
        access = self.access_of(brain, list(live))
        now = self.clock.now()
        ranked: list[MemoryHit] = []
        for doc_id, doc in live.items():
            judged = best[doc_id]
            seen = access[doc_id]
            confidence = effective_confidence(doc.memory, doc.created_at, seen.last, now)
            importance = doc.memory.importance if doc.memory else None
            ranked.append(
                MemoryHit(
                    memory=doc,
                    text=judged.hit.chunk.text,
                    score=round(judged.relevance, 4),
                    effective_score=effective_score(judged.relevance, confidence, importance),
                    confidence=confidence,
                    access=seen,
                    bm25_rank=judged.hit.bm25_rank,
                    vector_rank=judged.hit.vector_rank,
                )
            )
        # A question naming one thing exactly (INC-20049) is answered first by the memories about
        # it, whose own text names it among few others of its sort (relevance.py `naming`),
        # ordered among themselves as every search orders them (the blend), each weighted by its
        # importance and confidence: near twins otherwise led on their meaning and importance. A
        # list naming it among many (an audit list, a tag list) keeps its place by relevance: it
        # led answers three times as relevant while any share lifted it.
        candidates = [best[i] for i in live]
        exact = asked(query)
        ups = naming(candidates, exact)
        lifts = zip(candidates, ups, blend(candidates, exact, ups), strict=True)
        lifted = {j.hit.chunk.document_id: blended for j, up, blended in lifts if up >= ABOUT}

        def lifted_first(h: MemoryHit) -> tuple[bool, float]:
            if h.memory.id not in lifted:
                return True, -h.effective_score
            importance = h.memory.memory.importance if h.memory.memory else None
            return False, -lifted[h.memory.id] * effective_score(1.0, h.confidence, importance)

        ranked.sort(key=lambda h: (*lifted_first(h), -read_rank(h.access.count), h.memory.id))
        ranked = ranked[: q.limit]
        if as_of.known_at is not None:  # the links between values as then held, of the hits handed back
            shown = as_of.links_as_held(
                {h.memory.id: h.memory for h in ranked}, self.documents.repo.get_many_by_id
            )
            ranked = [replace(h, memory=shown[h.memory.id]) for h in ranked]
        good = [h.memory.id for h in ranked if h.score is not None and h.score >= GOOD_MATCH]
        if q.count_access and self.access is not None and good:
            self.access.saw(brain.id, good)  # a read is a good match handed back, not every hit
        return ranked

    def _best(self, hits: Sequence[ChunkHit], vector: list[float]) -> dict[str, Judged]:
        """Each document's best judged chunk."""
        best: dict[str, Judged] = {}
        for judged in judge(self.search_service.chunks, hits, vector, self.search_service.tuning.calibration):
            held = best.get(judged.hit.chunk.document_id)
            if held is None or judged.relevance > held.relevance:
                best[judged.hit.chunk.document_id] = judged
        return best

    def since(self, brain: Brain, since: datetime, *, limit: int) -> list[Document]:
        """Memories created at or after `since` (deleted and superseded ones too), newest first."""
        ids = self.claims.since(brain.id, since, limit=limit)
        ids = list(dict.fromkeys(ids))  # a restored (upserted) memory has a time item per write
        docs = self.documents.repo.get_many_by_id(ids[:limit])
        return [docs[i] for i in ids[:limit] if i in docs and docs[i].brain_id == brain.id]

    def oldest_first(self, brain: Brain, *, page: int = 500) -> Iterator[Document]:
        """Every stored memory (deleted and superseded ones too) in the order it was stored,
        `page` at a time from the memories-by-time records. A memory stored again under its own
        id (an upsert) comes once, at its first store: later stores are stamped after the
        creation time its document keeps."""
        for stamped in self.claims.oldest_first(brain.id, page=page):
            docs = self.documents.repo.get_many_by_id(entry.doc_id for entry in stamped)
            for entry in stamped:
                doc = docs.get(entry.doc_id)
                if doc is not None and doc.brain_id == brain.id and entry.no_later_than(doc.created_at):
                    yield doc

    def count(self, brain: Brain, *, max_age_s: float = COUNT_MAX_AGE_S) -> tuple[int, int]:
        """How many memories the brain holds (deleted ones too) and how many chunks the live ones
        have, as the caller may see them: from the brain's kept counts once built
        (documents/memory_counts.py), else counted from every record at most `max_age_s` ago
        (briefings show the totals on each call)."""
        kept = self.kept_counts(brain)
        if kept is not None:
            counted = {t.value for t in COUNTED_TYPES}
            in_types = [(b, held) for b, held in kept if b.folder in counted]
            return sum(h[0] for _, h in in_types), sum(h[1] for b, h in in_types if not b.deleted)
        now = time.monotonic()
        key = (brain.id, access.view_of(brain))
        with self._counted_lock:
            cached = self._counted.get(key)
        if cached is not None and now - cached[0] <= max_age_s:
            return cached[1]
        total = chunks = 0
        for seen in self.glances(brain, list(COUNTED_TYPES)):
            total += 1
            chunks += 0 if seen.deleted else seen.chunk_count
        with self._counted_lock:
            self._counted[key] = (now, (total, chunks))
        return total, chunks

    def kept_counts(self, brain: Brain) -> list[tuple[Bucket, list[int]]] | None:
        """The brain's kept counts the caller may see, bucket by bucket ([records, chunks]); None
        while they are being built (one step is taken here) or when a record they count is one
        a count must decode (damaged, or a value validation would convert)."""
        found = self._kept_counts(brain)
        return None if found is None else found[0]

    def kept(self, brain: Brain) -> tuple[list[tuple[Bucket, list[int]]], Iterator[Made] | None] | None:
        """`kept_counts` and `kept_times` from one read of the counts' record (zengram's stats asks
        for both); None as `kept_counts`."""
        found = self._kept_counts(brain)
        if found is None:
            return None
        buckets, held = found
        return buckets, self.kept_times(brain, held=held)

    def _kept_counts(self, brain: Brain) -> tuple[list[tuple[Bucket, list[int]]], dict[str, Any]] | None:
        counts, pk = self.documents.repo.counts, documents_pk(brain.id)
        try:
            held = counts.held(pk)
            owners = built_owners(held)
            if owners is None and counts.step(pk):
                held = counts.held(pk)
                owners = built_owners(held)
        except Unavailable:  # the store refused the step's write (another process holds its writer lock)
            return None
        if owners is None or held is None:
            return None
        sees = access.seer(brain)  # the read rule, by owner
        seen = [
            (name, held)
            for owner, buckets in owners.items()
            if sees(owner_of(owner))
            for name, held in buckets.items()
        ]
        if any(name == DAMAGED for name, _ in seen):
            return None
        return [(Bucket(name), counted) for name, counted in seen], held

    def kept_times(self, brain: Brain, *, held: dict[str, Any] | None = None) -> Iterator[Made] | None:
        """The brain's live memories the caller may see by creation time, newest first, from
        their kept entries (documents/memory_times.py; those to be read instead first of all);
        None while the entries are being built (one step is taken here). `held`: the counts'
        record the caller has just read (None: it is read here)."""
        counts, pk = self.documents.repo.counts, documents_pk(brain.id)
        try:
            built = times_done(held) if held is not None else counts.times_built(pk)
            if not built and not counts.step_times(pk):
                return None
        except Unavailable:  # the store refused the step's write (another process holds its writer lock)
            return None
        sees = access.seer(brain)
        return (m for m in map(made, counts.newest(pk)) if sees(owner_of(m.owner)))

    def of_type(self, brain: Brain, kinds: Sequence[MemoryType]) -> Iterator[Document]:
        """Every stored memory of these types (deleted ones too), in path order."""
        for kind in kinds:
            yield from self.documents.repo.list(brain.id, f"{PREFIX}{kind.value}/")

    def glances(self, brain: Brain, kinds: Sequence[MemoryType]) -> Iterator[Glance]:
        """What `of_type` lists, each record read from its raw data and decoded only when asked
        (or when a field it reads is of another kind)."""
        for kind in kinds:
            for item in self.documents.repo.raw(brain.id, f"{PREFIX}{kind.value}/"):
                yield Glance.of(item)

    def current_of_type(
        self, brain: Brain, kinds: Sequence[MemoryType], *, containing: Containing | None = None
    ) -> Iterator[Document]:
        """The current memories of these types (neither deleted, superseded nor expired), in path
        order; with `containing`, only those whose key or subject holds its text, in any case.
        Only the records the brain's current memories name are read (documents/current_memories.py:
        a key written 10,000 times is one current value beside 9,999 superseded ones), and those
        that cannot answer are passed over from their raw data, undecoded."""
        for kind in kinds:
            for item in self._may_be_current(brain, f"{PREFIX}{kind.value}/", containing):
                if _passed_over(item.data, containing):
                    continue
                doc = document_of(item)
                m = doc.memory
                if doc.deleted_at is not None or m is None or not m.current:
                    continue
                if containing is None or containing.held_by(getattr(m, containing.field)):
                    yield doc

    def _may_be_current(self, brain: Brain, prefix: str, containing: Containing | None) -> Iterator[Item]:
        """The records under `prefix` that the brain's current memories name (with `containing`,
        those whose key or subject may hold its text), in path order. While the brain's entries
        are being built (one step here, documents/current_memories.py), those the build has
        passed and every record after them; every record when the store refuses the step's
        writes (another process holds the store's writer lock)."""
        repo = self.documents.repo
        pk = documents_pk(brain.id)

        def wanted(entry: dict[str, Any]) -> bool:
            if containing is None or containing.field not in entry:
                return True
            held = entry[containing.field]
            return not ((held is None or isinstance(held, str)) and not containing.held_by(held))

        try:
            built = repo.current.step(pk)
        except Unavailable:
            return repo.raw(brain.id, prefix)
        if built:
            return repo.raw_at(brain.id, repo.current.paths(pk, prefix, wanted))
        reached = repo.current.reached(pk)
        if reached is None or reached < prefix:
            return repo.raw(brain.id, prefix)
        passed = repo.raw_at(brain.id, repo.current.paths(pk, prefix, wanted, upto=reached))
        if not reached.startswith(prefix):  # the build has passed every path under the prefix
            return passed
        return itertools.chain(passed, repo.raw(brain.id, prefix, after=reached))

    def access_of(self, brain: Brain, doc_ids: list[str]) -> dict[str, Access]:
        """How often and when last each memory was read, in one batch read."""
        if self.access is None or not doc_ids:
            return {doc_id: Access(0, None) for doc_id in doc_ids}
        return self.access.get_many(brain.id, doc_ids)


def _passed_over(data: dict[str, Any], containing: Containing | None) -> bool:
    """Whether a memory's raw record shows that current_of_type does not want it. A field of
    another kind than the document's is not judged here: decoding it names the damaged record."""
    if not may_be_current(data):
        return True
    memory = data["memory"]
    if containing is None or not isinstance(memory, dict):
        return False
    held = memory.get(containing.field)
    return (held is None or isinstance(held, str)) and not containing.held_by(held)
