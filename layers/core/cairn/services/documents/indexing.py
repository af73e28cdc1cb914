"""Turn a document's text into embedded chunks in the ChunkIndex, embedding only what changed.

Preparing (chunk, compare with the index, embed) is separate from applying (index writes), so a
writer can prepare before it commits the record and apply right after.

A rewrite is a diff against what the index holds. Every chunk carries a fingerprint: a digest of
the text its vector is embedded from (and the embedding model, and the vector's version where
the embedder names one: ports/embedder.py VersionedVectors), then a digest of everything else
the chunk holds but its context. Chunks the index already has under the same id and fingerprint
are left alone; the others are written, with the stored vector of any chunk of the document
embedded from the same text, or a new one; chunks the text no longer yields are removed. The
index ends up as a full re-index would leave it, and appending a line embeds one or two chunks.
Chunking an append extends the document's previous chunking, kept in memory for recently
written documents (ingest/chunking.py), instead of cutting the whole text again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cairn.domain.errors import PayloadTooLarge
from cairn.domain.models import Chunk, Document, MemoryFacet
from cairn.domain.paths import SCOPE_PREFIXES
from cairn.ingest.chunking import Chunked, TextSpan, chunk
from cairn.ingest.profiles import LibraryProfile, chunk_for
from cairn.ports.chunks import ChunkIndex
from cairn.ports.embedder import Embedder, Vectors, VersionedVectors
from cairn.services.documents.chunk_ids import LIVE, chunk_id_of, kept_stage
from cairn.services.documents.dropped_chunks import DroppedChunks

DEFAULT_REMEMBERED_CHARS = 16_000_000
"""Text the indexer keeps the chunking of, over all recently written documents."""
REMEMBERED_FROM_CHARS = 16_384
"""Shorter texts are not kept: cutting and fingerprinting 16 KiB again takes under a millisecond."""

MAX_CHUNKS = 20_000
"""The chunks one write may make of a document: prose at its largest (5,000,000 characters) makes
about 7,000. Text of many tiny sections made 100,000 and more, which the AWS shape cannot take
(an ingest state machine past 25,000 history events, an activation past the index's id limit)."""


def check_chunk_count(count: int) -> None:
    if count > MAX_CHUNKS:
        raise PayloadTooLarge(
            f"the text makes {count} chunks, and a document holds at most {MAX_CHUNKS}: "
            "split it into several documents or join its short sections"
        )


@dataclass(frozen=True)
class PreparedChunks:
    chunks: list[Chunk]
    """The chunks to write: new or changed since the index last saw the document."""
    vectors: Vectors  # one row per chunk to write
    count: int = 0  # how many chunks the document has
    removed: tuple[str, ...] = ()  # ids of indexed chunks the document no longer has
    staged: tuple[str, ...] | None = None
    """Instead of `chunks`: the ids of chunks already in the index, inactive (a staged ingest)."""
    replaced: int | None = None  # staged: the live version's chunk count (None: not known)
    context: str | None = None
    explicit_context: bool = False
    """Whether the first chunk gets `context`; otherwise it keeps the one it has in the index."""

    def with_context(self, context: str | None) -> PreparedChunks:
        """The same chunks, the first carrying index-only `context` (None: none)."""
        return replace(self, context=context, explicit_context=True)


@dataclass(frozen=True)
class PlannedChunks:
    """A document's chunks to write before their new vectors exist (`DocumentIndexer.plan`)."""

    chunks: list[Chunk]  # one per ordinal in `changed`
    changed: list[int]  # ordinals of the chunks to write
    reused: dict[int, Vectors]  # ordinal -> vector of a stored chunk, same text
    missing: list[tuple[int, str]]  # ordinal -> text to embed
    count: int = 0
    removed: tuple[str, ...] = ()


def scope_of(path: str) -> str | None:
    for scope, prefix in SCOPE_PREFIXES.items():
        if path.startswith(prefix):
            return scope
    return None


def embedding_text(title: str, heading: str | None, text: str) -> str:
    """What the embedder sees: the chunk with its document title and section as context.

    Sequential context stays out: on LoCoMo dev, embedding it too lowered recall@10 .773 -> .764."""
    context = [part for part in (title, heading) if part and part not in text[: len(part) + 8]]
    return "\n".join([*context, text])


def embedding_key(fingerprint: str) -> str:
    """The part of a fingerprint that names the vector: equal keys, interchangeable vectors."""
    return fingerprint.partition(":")[0]


def _digest(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=12)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


@dataclass(frozen=True)
class _Cut:
    """A document's spans, each with its fingerprint and the text its vector is embedded from."""

    chunked: Chunked
    title: str
    fields: dict[str, Any]  # what every chunk copies from the document
    fields_key: str  # digest of the title, the fields and the embedding model
    fingerprints: tuple[str, ...]


class DocumentIndexer:
    def __init__(
        self,
        chunks: ChunkIndex,
        embedder: Embedder,
        *,
        target_chars: int,
        overlap_chars: int,
        remembered_chars: int = DEFAULT_REMEMBERED_CHARS,
        profiles: Callable[[str], LibraryProfile | None] | None = None,
    ) -> None:
        """`profiles(brain_id)`: the profile a brain's documents are cut with (its library type's,
        services/mnemosyne/library_profiles.py); without it, or when it gives None, the default cut."""
        self.index = chunks
        self.embedder = embedder
        self.target_chars = target_chars
        self.overlap_chars = overlap_chars
        self._recent = _Recent(remembered_chars)
        self._profiles = profiles
        self.dropped = DroppedChunks()  # told whenever `apply` leaves a document fewer chunks

    def prepare(
        self, doc: Document, text: str, profile: LibraryProfile | None = None, *, capped: bool = True
    ) -> PreparedChunks:
        """Chunk `text` and embed what the index does not already hold for `doc`.

        `profile`: the library type's cutting rules (ingest/profiles.py); None: the brain's.
        `capped`: refuse more than MAX_CHUNKS (a write); a document already stored is indexed whole."""
        return self.finish([self.plan(doc, text, profile, capped=capped)])[0]

    def plan(
        self, doc: Document, text: str, profile: LibraryProfile | None = None, *, capped: bool = True
    ) -> PlannedChunks:
        """`prepare` up to the embedding: `finish` embeds the texts of many plans together."""
        cut = self._cut(doc, text, profile if profile is not None else self._profile_of(doc))
        spans, prints = cut.chunked.spans, cut.fingerprints
        if capped:
            check_chunk_count(len(spans))
        stored = self.index.fingerprints(doc.brain_id, doc.id)
        stage = kept_stage(doc.id, stored)
        ids = [chunk_id_of(doc.id, stage, i) for i in range(len(spans))]
        changed = [i for i, cid in enumerate(ids) if stored.get(cid) != prints[i]]
        wanted = set(ids)
        removed = tuple(cid for cid in stored if cid not in wanted)
        reused = self._reused_vectors(doc, cut, changed, stored)
        missing = [(i, self._embedding_text(cut, i)) for i in changed if i not in reused]
        chunks = [self._chunk(doc, cut, i, stage) for i in changed]
        return PlannedChunks(chunks, changed, reused, missing, count=len(spans), removed=removed)

    def finish(
        self, plans: Sequence[PlannedChunks], recent: RecentVectors | None = None
    ) -> list[PreparedChunks]:
        """The plans' chunks with their vectors: every distinct text to embed goes in one
        `embed()` call (a text's vector depends on its text only, so this equals embedding plan by
        plan, text by text). With `recent`, a text embedded by an earlier call is not embedded again."""
        vectors = iter(self._embed_distinct([text for plan in plans for _, text in plan.missing], recent))
        prepared: list[PreparedChunks] = []
        for plan in plans:
            rows = dict(plan.reused)
            rows.update((i, next(vectors)) for i, _ in plan.missing)
            matrix = np.zeros((len(plan.changed), self.embedder.dimension), np.float32)
            for row, i in enumerate(plan.changed):
                matrix[row] = rows[i]
            prepared.append(PreparedChunks(plan.chunks, matrix, count=plan.count, removed=plan.removed))
        return prepared

    def _reused_vectors(
        self, doc: Document, cut: _Cut, changed: Sequence[int], stored: dict[str, str]
    ) -> dict[int, Vectors]:
        """Changed chunks embedded from the same text as a stored chunk: that chunk's vector."""
        holders: dict[str, str] = {}  # embedding key -> a stored chunk embedded that way
        for cid, fingerprint in stored.items():
            if fingerprint:
                holders.setdefault(embedding_key(fingerprint), cid)
        lenders = {i: holders[key] for i in changed if (key := embedding_key(cut.fingerprints[i])) in holders}
        found = self.index.get_vectors(doc.brain_id, sorted(set(lenders.values()))) if lenders else {}
        return {i: found[cid] for i, cid in lenders.items() if cid in found}

    def embed(self, texts: Sequence[str]) -> Vectors:
        return (
            self.embedder.embed(list(texts)) if texts else np.zeros((0, self.embedder.dimension), np.float32)
        )

    def _embed_distinct(self, texts: Sequence[str], recent: RecentVectors | None) -> Vectors:
        out = np.empty((len(texts), self.embedder.dimension), np.float32)
        rows: dict[str, list[int]] = {}  # text -> the rows that want its vector
        for row, text in enumerate(texts):
            known = recent.get(text) if recent is not None else None
            if known is None:
                rows.setdefault(text, []).append(row)
            else:
                out[row] = known
        if rows:
            for (text, wanted), vector in zip(rows.items(), self.embed(list(rows)), strict=True):
                out[wanted] = vector
                if recent is not None:
                    recent.put(text, vector)
        return out

    def default_chunk_count(self, text: str) -> int:
        """How many chunks the default cut makes of `text` (no embedding: a cheap estimate of what
        indexing it will cost, before a document exists)."""
        return len(chunk(text, self.target_chars, self.overlap_chars).spans)

    def chunks_of(self, doc: Document, text: str) -> list[tuple[Chunk, str]]:
        """The document's chunks, each with the text the embedder sees for it."""
        cut = self._cut(doc, text, self._profile_of(doc))
        check_chunk_count(len(cut.fingerprints))
        return [
            (self._chunk(doc, cut, i), self._embedding_text(cut, i)) for i in range(len(cut.fingerprints))
        ]

    def _profile_of(self, doc: Document) -> LibraryProfile | None:
        return self._profiles(doc.brain_id) if self._profiles is not None else None

    def _cut(self, doc: Document, text: str, profile: LibraryProfile | None = None) -> _Cut:
        """Chunk and fingerprint the text, reusing the previous cut of the document where the
        text only grew and the document's own fields did not change."""
        if profile is not None and not profile.cuts_like_default:
            return self._profiled_cut(doc, text, profile)
        previous = self._recent.get(doc.id)
        fields = _copied_fields(doc)
        fields_key = _digest(
            self.embedder.model_id, doc.title, json.dumps(fields, sort_keys=True, default=str)
        )
        chunked = chunk(text, self.target_chars, self.overlap_chars, previous.chunked if previous else None)
        kept = chunked.reused if previous is not None and previous.fields_key == fields_key else 0
        prints = list(previous.fingerprints[:kept]) if previous is not None else []
        for ordinal in range(kept, len(chunked.spans)):
            span = chunked.spans[ordinal]
            embedded = self._vector_key(embedding_text(doc.title, span.heading, span.text))
            row = _digest(
                fields_key, str(ordinal), str(span.start), str(span.end), _title(doc, span), span.text
            )
            prints.append(f"{embedded}:{row}")
        cut = _Cut(chunked, doc.title, fields, fields_key, tuple(prints))
        self._recent.put(doc.id, cut if len(text) >= REMEMBERED_FROM_CHARS else None, len(text))
        return cut

    def _profiled_cut(self, doc: Document, text: str, profile: LibraryProfile) -> _Cut:
        """A profile's cut is not extended on append (a boundary may reach back): cut afresh,
        each span's context in front of its heading path (chunk title and embedded text)."""
        spans = tuple(TextSpan(s.text, s.start, s.end, s.label) for s in chunk_for(profile, text))
        chunked = Chunked(text, profile.target_chars, profile.overlap_chars, spans, (), ())
        fields = _copied_fields(doc)
        fields_key = _digest(
            self.embedder.model_id, doc.title, json.dumps(fields, sort_keys=True, default=str)
        )
        prints = tuple(
            f"{self._vector_key(embedding_text(doc.title, span.heading, span.text))}:"
            f"{_digest(fields_key, str(i), str(span.start), str(span.end), _title(doc, span), span.text)}"
            for i, span in enumerate(spans)
        )
        self._recent.put(doc.id, None, len(text))
        return _Cut(chunked, doc.title, fields, fields_key, prints)

    def _vector_key(self, text: str) -> str:
        """The fingerprint's first part: the digest of the model and the text its vector is
        embedded from, and of the vector's version where the embedder has one for the text."""
        version = self.embedder.vector_version(text) if isinstance(self.embedder, VersionedVectors) else ""
        return (
            _digest(self.embedder.model_id, text, version)
            if version
            else _digest(self.embedder.model_id, text)
        )

    def _chunk(self, doc: Document, cut: _Cut, ordinal: int, stage: str = LIVE) -> Chunk:
        span = cut.chunked.spans[ordinal]
        return Chunk(
            id=chunk_id_of(doc.id, stage, ordinal),
            ordinal=ordinal,
            text=span.text,
            start=span.start,
            end=span.end,
            title=_title(doc, span),
            fingerprint=cut.fingerprints[ordinal],
            **cut.fields,
        )

    @staticmethod
    def _embedding_text(cut: _Cut, ordinal: int) -> str:
        span = cut.chunked.spans[ordinal]
        return embedding_text(cut.title, span.heading, span.text)

    def nothing(self) -> PreparedChunks:
        return PreparedChunks([], np.zeros((0, self.embedder.dimension), np.float32))

    def staged(self, chunk_ids: Sequence[str], replaced: int | None = None) -> PreparedChunks:
        """`replaced`: the chunk count of the version the staged one replaces, from its record (0:
        none), so an activation that drops none tells no hook (each would read what it keeps)."""
        return replace(self.nothing(), staged=tuple(chunk_ids), count=len(chunk_ids), replaced=replaced)

    def apply(self, doc: Document, prepared: PreparedChunks) -> bool:
        """Write what `prepare` found changed; the first chunk keeps its indexed context unless
        the prepared chunks say otherwise. False when staged chunks to activate were gone (a
        reconcile of the document took them meanwhile): the caller indexes it from its text."""
        if prepared.staged is not None:
            context = prepared.context if prepared.explicit_context else self.context_of(doc)
            self.index.activate(doc.brain_id, doc.id, prepared.staged)
            if set(self.index.fingerprints(doc.brain_id, doc.id)) != set(prepared.staged):
                return False
            if context and prepared.staged:
                self.index.set_context(doc.brain_id, doc.id, context)
            if prepared.replaced is None or prepared.replaced > len(prepared.staged):
                self.dropped.tell(doc, len(prepared.staged))
            return True
        chunks = prepared.chunks
        if chunks and chunks[0].ordinal == 0:  # read before the write replaces it
            context = prepared.context if prepared.explicit_context else self.context_of(doc)
            chunks = [chunks[0].model_copy(update={"context": context or ""}), *chunks[1:]]
        elif prepared.explicit_context and prepared.count:
            self.index.set_context(doc.brain_id, doc.id, prepared.context or "")
        owner = owner_token(doc.memory.user_id) if doc.memory and doc.memory.user_id else None
        if owner is not None:  # a user's memory: every chunk names its owner for full-text leg filters
            chunks = [c.model_copy(update={"context": owner}) for c in chunks]
        if chunks:
            self.index.upsert(chunks, prepared.vectors)
        if prepared.removed:
            self.index.delete_chunks(doc.brain_id, prepared.removed)
            self.dropped.tell(doc, prepared.count)
        return True

    def context_of(self, doc: Document) -> str | None:
        """The context a document's first chunk carries now (kept when it is re-indexed)."""
        chunks = self.index.get_chunks(doc.brain_id, doc.id)
        return chunks[0].context or None if chunks else None

    def set_context(self, brain_id: str, document_id: str, context: str) -> None:
        self.index.set_context(brain_id, document_id, context)

    def remove(self, doc: Document) -> None:
        self.index.delete_document(doc.brain_id, doc.id)


def _copied_fields(doc: Document) -> dict[str, Any]:
    memory = doc.memory
    return {
        "brain_id": doc.brain_id,
        "document_id": doc.id,
        "path": doc.path,
        "tags": list(doc.tags),
        "type": memory.type.value if memory else None,
        "scope": scope_of(doc.path),
        "sector": memory.sector if memory else None,
        "valid_from": memory.valid_from if memory else None,
        "valid_to": memory.valid_to if memory else None,
        "current": memory is None or memory.current,
        "facets": memory_facets(memory),
        "importance": _ranked_importance(memory),
        "created_at": doc.created_at,
    }


FACET_FIELDS = (
    "type", "client_id", "source_agent", "category", "knowledge_category", "key", "subject",
    "user_id", "sector",
)  # fmt: skip


def owner_token(user_id: str) -> str:
    """An index-only word naming a user (ThoughtMCP's memories carry it in every chunk's context):
    ANDed into a boolean full-text query, the index intersects the user's rows instead of
    filtering every match. Letters then digits, which no tokenizer or stemmer alters."""
    digest = hashlib.sha256(user_id.encode("utf-8")).hexdigest()
    return "owner" + str(int(digest[:15], 16))


def _ranked_importance(memory: MemoryFacet | None) -> float | None:
    """What a chunk's importance filter compares: a memory's salience where it has one (ThoughtMCP's
    minSalience), else its importance (zengram's)."""
    if memory is None:
        return None
    return memory.salience if memory.salience is not None else memory.importance


def memory_facets(memory: MemoryFacet | None) -> dict[str, str]:
    """The keyword fields of a memory its chunks carry, for filters inside each search leg."""
    if memory is None:
        return {}
    values = {name: getattr(memory, name) for name in FACET_FIELDS}
    return {name: str(value) for name, value in values.items() if value is not None}


def _title(doc: Document, span: TextSpan) -> str:
    return " › ".join(p for p in (doc.title, span.heading) if p)


class _Recent:
    """The latest cut of recently written documents, least recently used dropped first."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._cuts: OrderedDict[str, tuple[_Cut, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, doc_id: str) -> _Cut | None:
        with self._lock:
            found = self._cuts.get(doc_id)
            if found is None:
                return None
            self._cuts.move_to_end(doc_id)
            return found[0]

    def put(self, doc_id: str, cut: _Cut | None, chars: int) -> None:
        """Keep `cut` as the document's latest (None: forget the document)."""
        with self._lock:
            old = self._cuts.pop(doc_id, None)
            if old is not None:
                self._chars -= old[1]
            if cut is None or chars > self.max_chars:
                return
            self._cuts[doc_id] = (cut, chars)
            self._chars += chars
            while self._chars > self.max_chars:
                _, (_, size) = self._cuts.popitem(last=False)
                self._chars -= size


class RecentVectors:
    """The vectors of the last `size` distinct texts embedded, for a bulk write whose documents
    repeat passages (licences, footers, quoted mail): thread-safe, oldest dropped first."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Vectors | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
            return vector

    def put(self, text: str, vector: Vectors) -> None:
        with self._lock:
            self._vectors[text] = vector.copy()
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
