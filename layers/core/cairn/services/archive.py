"""Whole-brain archives: a brain as a stream of JSON records, and a restore from one.

Format 1 (docs/ARCHITECTURE.md, "Archive"): a header, then `document` records (every live
document that is not a typed memory: gbrain pages, notes, binaries as base64), `memory` records
(typed memories, in the order they were stored), then per document its numbered `link` records
(ends named by document path) and its `raw` rows, then the `gap` records (hashes only).

A restore writes through the services, so every rule holds as for any writer: documents through
DocumentService.write (the same bytes at the same path are a no-op), memories through
MemoryService.store with their ids (a memory already in the brain is skipped; being stored
oldest first, supersede by key or subject rebuilds the same current memory), links with new ids
from the brain's link sequence (one identical in its ends, kind and validity is skipped), raw
rows overwritten, gaps by hash. So a restore that stopped part-way is resumed by running it
again. Meanwhile the brain's collection is `restoring` (services/gbrain/pages.py), so gbrain refuses
every page mutation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from cairn.domain.errors import CairnError, InvalidInput, NotFound
from cairn.domain.models import (
    Brain,
    Document,
    DocumentSource,
    MemoryFacet,
    MemoryType,
    MetadataValue,
    Visibility,
)
from cairn.ports.clock import Clock
from cairn.services.brains import BrainService
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.documents.service import DocumentService
from cairn.services.gbrain.gaps import GapService, KnowledgeGap
from cairn.services.gbrain.pages import NEEDS_FULL_SYNC_KEY, STATE_KEY, PageService
from cairn.services.gbrain.raw_data import RawDataService
from cairn.services.links.graph import GraphService, LinkDraft
from cairn.services.links.repository import NumberedLink, check_interval, check_kind, check_validity
from cairn.services.memory.memories import (
    DEFAULT_IMPORTANCE,
    PREFIX,
    SUPERSEDES,
    MemoryInput,
    MemoryService,
    memory_path,
)
from cairn.services.thoughtmcp.memories import ThoughtMemories

KIND: Final = "cairn-archive"
FORMAT: Final = 1
TRANSIENT = (STATE_KEY, NEEDS_FULL_SYNC_KEY)
"""Brain metadata an archive leaves out: the collection's state at export time."""
LINKS_PER_WRITE = 100
PATHS_CACHED = 4096


class RestoreIncomplete(CairnError):
    """A restore stopped part-way; the brain stays `restoring` until a re-run completes it."""

    code = "restore_incomplete"


class _WriteFailed(Exception):
    """A failure that stops a restore even though it surfaced while handling one record."""


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, _WriteFailed) else f"{type(exc).__name__}: {exc}"


# -- records: the archive's boundary ----------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BrainInfo(_Record):
    slug: str
    name: str
    visibility: Visibility = Visibility.private
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    embedding_model: str | None = None
    embedding_dim: int | None = None
    created_at: datetime | None = None


class Header(_Record):
    kind: Literal["cairn-archive"]
    format: Literal[1]
    brain: BrainInfo
    exported_at: datetime


class DocumentRecord(_Record):
    kind: Literal["document"] = "document"
    path: str
    content: str | None = None
    """The bytes as text when they are UTF-8, else None and `content_base64` holds them."""
    content_base64: str | None = None
    title: str | None = None
    content_type: str | None = None
    source: DocumentSource = DocumentSource.ingest
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    memory: MemoryFacet | None = None
    """The facet of a memory-like document that is not a typed memory (an extracted fact, an episode)."""
    id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    version: int | None = None

    @model_validator(mode="after")
    def _one_content(self) -> DocumentRecord:
        if (self.content is None) == (self.content_base64 is None):
            raise ValueError("a document has either content or content_base64")
        if self.content_base64 is not None:
            try:
                base64.b64decode(self.content_base64, validate=True)
            except binascii.Error:
                raise ValueError("content_base64 is not base64") from None
        return self

    def data(self) -> bytes:
        if self.content is not None:
            return self.content.encode("utf-8")
        return base64.b64decode(self.content_base64 or "")


class MemoryRecord(_Record):
    kind: Literal["memory"] = "memory"
    id: str
    type: MemoryType
    content: str
    source_agent: str | None = None
    client_id: str | None = None
    category: str | None = None
    importance: float | None = None
    knowledge_category: str | None = None
    key: str | None = None
    subject: str | None = None
    status_value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    sector: str | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    strength: float | None = None
    salience: float | None = None
    superseded_by: str | None = None
    expired_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class LinkRecord(_Record):
    kind: Literal["link"] = "link"
    id: int
    """Its id in the exported brain; a restore gives it a new one."""
    source: str
    target: str
    relationship: str
    valid_from: str | None = None
    valid_until: str | None = None
    weight: float = 1.0
    created_at: datetime


class RawRecord(_Record):
    kind: Literal["raw"] = "raw"
    path: str
    source: str
    data: dict[str, Any]
    stored_at: datetime | None = None


class GapRecord(_Record):
    kind: Literal["gap"] = "gap"
    query_hash: str
    page: str | None = None
    confidence: float | None = None
    sensitivity: str = "internal"
    detected_at: datetime
    resolved_at: datetime | None = None
    resolved_by: str | None = None


Record = Annotated[
    DocumentRecord | MemoryRecord | LinkRecord | RawRecord | GapRecord, Field(discriminator="kind")
]
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)
KINDS = ("document", "memory", "link", "raw", "gap")


@dataclass
class ImportReport:
    brain: Brain
    created_brain: bool
    written: Counter[str] = field(default_factory=Counter)
    """Per record kind, what this run wrote."""
    unchanged: Counter[str] = field(default_factory=Counter)
    """Per record kind, what was already there (a re-run) and was left alone."""
    errors: list[str] = field(default_factory=list)
    """Records the brain refused (`line N: why`); the rest were restored."""


def is_typed_memory(doc: Document) -> bool:
    """A memory MemoryService stored (and can store again under its id): at its own path."""
    return doc.memory is not None and doc.path == memory_path(doc.memory.type, doc.id)


class BrainArchive:
    def __init__(
        self,
        brains: BrainService,
        documents: DocumentService,
        memories: MemoryService,
        pages: PageService,
        graph: GraphService,
        gaps: GapService,
        raw_data: RawDataService,
        clock: Clock,
        thoughts: ThoughtMemories | None = None,
    ) -> None:
        """`thoughts`: a restored ThoughtMCP memory (a document with a user) gets its row back and
        its waypoint links made again (services/thoughtmcp/memories.py)."""
        self.thoughts = thoughts
        self.brains = brains
        self.documents = documents
        self.memories = memories
        self.pages = pages
        self.graph = graph
        self.gaps = gaps
        self.raw_data = raw_data
        self.clock = clock

    # -- export -----------------------------------------------------------------------------------

    def export(self, brain: Brain) -> Iterator[dict[str, Any]]:
        """The brain's records, streamed: documents are read a page at a time, twice."""
        yield _dump(self._header(brain))
        for doc in self._live(brain):
            if not is_typed_memory(doc):
                yield _dump(_document_record(doc, self.documents.content(doc)))
        for doc in self.memories.oldest_first(brain):
            if doc.deleted_at is None and is_typed_memory(doc):
                yield _dump(_memory_record(doc, self.memories.text(doc)))
        path_of = _Cache(lambda doc_id: self._path_of(brain, doc_id))
        for doc in self._live(brain):
            for link in self.graph.links.outgoing_numbered(brain.id, doc.id):
                target = path_of(link.target_id)
                if target is not None:  # a link to a deleted document goes with it
                    yield _dump(_link_record(link, doc.path, target))
            for source in self.raw_data.sources(brain, doc.id):
                row = self.raw_data.get(brain, doc.id, source)
                if row is not None:
                    yield _dump(
                        RawRecord(path=doc.path, source=source, data=row[1], stored_at=row[0].stored_at)
                    )
        for gap in self.gaps.every(brain):
            page = path_of(gap.page_id) if gap.page_id else None
            yield _dump(_gap_record(gap, page))

    def _header(self, brain: Brain) -> Header:
        info = BrainInfo(
            slug=brain.slug,
            name=brain.name,
            visibility=brain.visibility,
            metadata={k: v for k, v in brain.metadata.items() if k not in TRANSIENT},
            embedding_model=brain.embedding_model,
            embedding_dim=brain.embedding_dim,
            created_at=brain.created_at,
        )
        return Header(kind=KIND, format=FORMAT, brain=info, exported_at=self.clock.now())

    def _live(self, brain: Brain) -> Iterator[Document]:
        return (doc for doc in self.documents.repo.list(brain.id) if doc.deleted_at is None)

    def _path_of(self, brain: Brain, doc_id: str) -> str | None:
        doc = self.documents.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None:
            return None
        return doc.path

    # -- import -----------------------------------------------------------------------------------

    def import_(self, into: str | None, records: Iterable[dict[str, Any]]) -> ImportReport:
        """Restore an archive into the brain `into` (id or slug), else the archive's own slug;
        a brain that does not exist is created with the archive's name and metadata.

        Line N is the Nth record. A header that is not format 1 is refused before anything is
        written. A malformed record, or any failure but a record the brain refuses, stops the
        restore with RestoreIncomplete and leaves the collection `restoring`; a refused record
        (an unknown link end, say) is reported in `errors` and the restore goes on."""
        stream = iter(records)
        try:
            first = next(stream, None)
        except InvalidInput as exc:
            raise InvalidInput(f"line 1: {exc.message}") from None
        header = _header(first)
        brain, created = self._target(header, into)
        prior = self.pages.state(brain).state
        self.pages.set_state(brain, state="restoring")
        report = ImportReport(brain=brain, created_brain=created)
        restore = _Restore(self, brain, report)
        lines = _Lines(stream)
        try:
            for raw in lines:
                restore.record(lines.line, _parse(raw))
            restore.flush_links()
        except Exception as exc:
            why = exc.message if isinstance(exc, CairnError) else _reason(exc)
            where = "at the end of the archive" if lines.ended else f"line {lines.line}"
            raise RestoreIncomplete(
                f"{where}: {why} — the restore of brain {brain.slug} stopped there and its "
                "collection stays `restoring`; run the import again to resume it"
            ) from exc
        self.pages.set_state(brain, state="active" if prior == "restoring" else prior)
        return report

    def _target(self, header: Header, into: str | None) -> tuple[Brain, bool]:
        ref = into or header.brain.slug
        try:
            return self.brains.get(ref), False
        except NotFound:
            if ref.startswith("brn_"):
                raise
        brain = self.brains.create(header.brain.name, slug=ref, visibility=header.brain.visibility.value)
        kept = {k: v for k, v in header.brain.metadata.items() if k not in TRANSIENT}
        if kept:
            brain = self.brains.repo.update(
                brain.id, lambda b: b.model_copy(update={"metadata": {**b.metadata, **kept}})
            )
        return brain, True


class _Restore:
    """One restore's running state: link drafts waiting to be written, resolved paths."""

    def __init__(self, archive: BrainArchive, brain: Brain, report: ImportReport) -> None:
        self.a = archive
        self.brain = brain
        self.report = report
        self.doc_ids = _Cache(self._doc_id)
        self.pending: list[LinkDraft] = []
        self.pending_source: str | None = None
        self.known: set[tuple[str, str, str | None, str | None]] = set()
        """(kind, target, valid_from, valid_until) of every link from the pending source."""

    def record(self, line: int, r: Record) -> None:
        if not isinstance(r, LinkRecord):
            self.flush_links()
        try:
            done = self._apply(r)
        except CairnError as exc:
            self.report.errors.append(f"line {line}: {r.kind}: {exc.message}")
            return
        if done is not None:
            (self.report.written if done else self.report.unchanged)[r.kind] += 1

    def _apply(self, r: Record) -> bool | None:
        """True: written; False: already there; None: counted later (a link waiting to be written)."""
        if isinstance(r, DocumentRecord):
            return self._document(r)
        if isinstance(r, MemoryRecord):
            return self._memory(r)
        if isinstance(r, LinkRecord):
            return self._link(r)
        if isinstance(r, RawRecord):
            return self._raw(r)
        return self._gap(r)

    def _document(self, r: DocumentRecord) -> bool:
        repo = self.a.documents.repo
        keep_id = r.id is not None and repo.get_by_id(r.id) is None  # a fresh store: ids as they were
        info = DocumentInput(
            title=r.title,
            tags=r.tags,
            metadata={k: v for k, v in r.metadata.items() if k != "tags"},
            source=r.source,
            content_type=r.content_type,
            memory=r.memory,
            doc_id=r.id if keep_id else None,
        )
        outcome = self.a.documents.write(self.brain, r.path, r.data(), info, reason="restore")
        doc = outcome.document
        if self.a.thoughts is not None and doc.memory is not None and doc.memory.user_id is not None:
            self.a.thoughts.adopt(self.brain, doc)
        return outcome.changed

    def _memory(self, r: MemoryRecord) -> bool:
        memory_id = self._memory_id(r.id)
        held = self.a.documents.repo.get_by_id(memory_id)
        if held is not None and held.brain_id == self.brain.id:
            return False
        stored = self.a.memories.store(self.brain, memory_input(r, memory_id))
        if stored.deduplicated:
            return False
        kept = {"strength": r.strength, "salience": r.salience, "expired_at": r.expired_at}
        kept = {k: v for k, v in kept.items() if v is not None}
        if kept:  # what MemoryService.store does not take

            def keep(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
                if live is None or live.memory is None or data is None:
                    return None
                return data, keep_info(live, memory=live.memory.model_copy(update=kept))

            self.a.documents.modify(self.brain, stored.memory.path, keep, reason="restore")
        return True

    def _memory_id(self, memory_id: str) -> str:
        """The id itself, unless another brain of this store holds it (a copy of a brain): then
        one derived from it and this brain, the same on every run."""
        held = self.a.documents.repo.get_by_id(memory_id)
        if held is None or held.brain_id == self.brain.id:
            return memory_id
        return copied_id(self.brain, memory_id)

    def _doc_id(self, path: str) -> str | None:
        try:
            return self.a.documents.get(self.brain, path).id
        except (NotFound, InvalidInput):
            pass
        moved = _copied_memory_path(self.brain, path)
        if moved is None:
            return None
        try:
            return self.a.documents.get(self.brain, moved).id
        except NotFound:
            return None

    def _end(self, path: str, what: str) -> str:
        doc_id = self.doc_ids(path)
        if doc_id is None:
            raise NotFound(f"{what} not found in the brain: {path}")
        return doc_id

    def _link(self, r: LinkRecord) -> bool | None:
        check_kind(r.relationship)
        check_interval(check_validity(r.valid_from), check_validity(r.valid_until))
        source, target = self._end(r.source, "link source"), self._end(r.target, "link target")
        if source != self.pending_source or len(self.pending) >= LINKS_PER_WRITE:
            self.flush_links()
            if source != self.pending_source:
                self.pending_source = source
                self.known = {
                    (link.kind, link.target_id, link.valid_from, link.valid_until)
                    for link in self.a.graph.links.outgoing_numbered(self.brain.id, source)
                }
        same = (r.relationship, target, r.valid_from, r.valid_until)
        if same in self.known:
            return False
        self.known.add(same)
        self.pending.append(
            LinkDraft(source, target, r.relationship, r.valid_from, r.valid_until, r.weight, r.created_at)
        )
        return None

    def flush_links(self) -> None:
        """Write the links waiting (their records were checked: a failure here stops the restore)."""
        if self.pending:
            try:
                self.a.graph.add_many(self.brain, self.pending)
            except CairnError as exc:
                raise _WriteFailed(f"writing links: {exc.message}") from exc
            self.report.written["link"] += len(self.pending)
            self.pending = []

    def _raw(self, r: RawRecord) -> bool:
        doc_id = self._end(r.path, "raw data's document")
        held = self.a.raw_data.get(self.brain, doc_id, r.source)
        if held is not None and held[1] == r.data:
            return False
        self.a.raw_data.put(self.brain, doc_id, r.source, r.data, overwrite=True)
        return True

    def _gap(self, r: GapRecord) -> bool:
        page_id = self._end(r.page, "gap's page") if r.page is not None else None
        _, created = self.a.gaps.restore(
            self.brain,
            r.query_hash,
            detected_at=r.detected_at,
            page_id=page_id,
            confidence=r.confidence,
            sensitivity=r.sensitivity,
            resolved_at=r.resolved_at,
            resolved_by=r.resolved_by,
        )
        return created


# -- mapping ----------------------------------------------------------------------------------------


def memory_input(r: MemoryRecord, memory_id: str | None = None) -> MemoryInput:
    """What MemoryService.store takes to store the archived memory again, under its id."""
    return MemoryInput(
        type=r.type,
        content=r.content,
        source_agent=r.source_agent,
        client_id=r.client_id or "global",
        category=r.category,
        importance=r.importance if r.importance is not None else DEFAULT_IMPORTANCE,
        knowledge_category=r.knowledge_category,
        key=r.key,
        subject=r.subject,
        status_value=r.status_value,
        valid_from=r.valid_from,
        valid_to=r.valid_to,
        sector=r.sector,
        metadata=r.metadata,
        tags=r.tags,
        memory_id=memory_id or r.id,
    )


def _memory_record(doc: Document, text: str) -> MemoryRecord:
    m = doc.memory
    assert m is not None
    return MemoryRecord(
        id=doc.id,
        type=m.type,
        content=text,
        source_agent=m.source_agent,
        client_id=m.client_id,
        category=m.category,
        importance=m.importance,
        knowledge_category=m.knowledge_category,
        key=m.key,
        subject=m.subject,
        status_value=m.status_value,
        valid_from=m.valid_from,
        valid_to=m.valid_to,
        sector=m.sector,
        # `tags` is the tags' stored copy; `supersedes` is set again by the supersede itself
        metadata={k: v for k, v in doc.metadata.items() if k not in ("tags", SUPERSEDES)},
        tags=doc.tags,
        strength=m.strength,
        salience=m.salience,
        superseded_by=m.superseded_by,
        expired_at=m.expired_at,
        created_at=doc.created_at,
        updated_at=doc.updated_at,
    )


def _document_record(doc: Document, data: bytes) -> DocumentRecord:
    try:
        text: str | None = data.decode("utf-8")
        encoded = None
    except UnicodeDecodeError:
        text, encoded = None, base64.b64encode(data).decode("ascii")
    return DocumentRecord(
        path=doc.path,
        content=text,
        content_base64=encoded,
        title=doc.title,
        content_type=doc.content_type,
        source=doc.source,
        metadata={k: v for k, v in doc.metadata.items() if k != "tags"},
        tags=doc.tags,
        memory=doc.memory,
        id=doc.id,
        created_at=doc.created_at,
        updated_at=doc.updated_at,
        version=doc.version,
    )


def _link_record(link: NumberedLink, source: str, target: str) -> LinkRecord:
    return LinkRecord(
        id=link.id,
        source=source,
        target=target,
        relationship=link.kind,
        valid_from=link.valid_from,
        valid_until=link.valid_until,
        weight=link.weight,
        created_at=link.created_at,
    )


def _gap_record(gap: KnowledgeGap, page: str | None) -> GapRecord:
    return GapRecord(
        query_hash=gap.query_hash,
        page=page,
        confidence=gap.confidence_score,
        sensitivity=gap.sensitivity,
        detected_at=gap.detected_at,
        resolved_at=gap.resolved_at,
        resolved_by=gap.resolved_by,
    )


def copied_id(brain: Brain, memory_id: str) -> str:
    """The id a memory gets in `brain` when another brain of the store holds its own id."""
    digest = hashlib.sha256(f"{brain.id}\x00{memory_id}".encode()).hexdigest()[:32]
    return f"{memory_id[:95]}.{digest}"


def _copied_memory_path(brain: Brain, path: str) -> str | None:
    """Where the typed memory archived at `path` is in `brain` when it got a copied id."""
    if not path.startswith(PREFIX) or not path.endswith(".md"):
        return None
    kind, _, name = path[len(PREFIX) : -len(".md")].partition("/")
    if kind not in MemoryType.__members__ or not name or "/" in name:
        return None
    return memory_path(MemoryType(kind), copied_id(brain, name))


def _dump(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")


def _header(raw: object) -> Header:
    if raw is None:
        raise InvalidInput("line 1: the archive is empty: it has no header")
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise InvalidInput(f"line 1: not a Cairn archive: the first record must have kind {KIND!r}")
    if raw.get("format") != FORMAT:
        raise InvalidInput(
            f"line 1: archive format {raw.get('format')!r} is not one this Cairn reads (format {FORMAT})"
        )
    try:
        return Header.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(f"line 1: bad header: {_first_error(exc)}") from None


def _parse(raw: object) -> Record:
    try:
        return _RECORD.validate_python(raw)
    except ValidationError as exc:
        raise InvalidInput(f"bad record: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}" if where else f"{error['msg']}{more}"


class _Lines:
    """The records after the header, counting the line being read (the header is line 1)."""

    def __init__(self, stream: Iterator[dict[str, Any]]) -> None:
        self.stream = stream
        self.line = 1
        self.ended = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> dict[str, Any]:
        self.line += 1
        try:
            return next(self.stream)
        except StopIteration:
            self.ended = True
            raise


class _Cache:
    """A bounded memo of a lookup; misses (None) are not kept, they may be found later."""

    def __init__(self, look: Callable[[str], str | None], size: int = PATHS_CACHED) -> None:
        self.look = look
        self.size = size
        self.kept: OrderedDict[str, str] = OrderedDict()

    def __call__(self, key: str) -> str | None:
        if key in self.kept:
            self.kept.move_to_end(key)
            return self.kept[key]
        value = self.look(key)
        if value is not None:
            self.kept[key] = value
            if len(self.kept) > self.size:
                self.kept.popitem(last=False)
        return value
