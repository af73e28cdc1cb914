"""The archive format: its header and record models, and each record made from what a brain holds.

Format 2 is format 1 closed by an `end` record that counts the records before it, so an archive
cut short at a line boundary (a copy interrupted, a disk that filled) is told from a whole one.
Format 1 archives (no `end` record) are still read."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from cairn.domain.models import (
    Brain,
    Document,
    DocumentSource,
    MemoryFacet,
    MemoryType,
    MetadataValue,
    Visibility,
)
from cairn.domain.moments import utc_moment
from cairn.domain.text import excerpt
from cairn.services.gbrain.gaps import KnowledgeGap
from cairn.services.links.repository import NumberedLink
from cairn.services.memory.memories import DEFAULT_IMPORTANCE
from cairn.services.memory.memory_model import SUPERSEDES, MemoryInput, memory_path

KIND: Final = "cairn-archive"


FORMAT: Final = 2
"""The format this Cairn writes."""


FORMATS_READ: Final = (1, 2)
"""The formats this Cairn reads."""


Instant = Annotated[datetime, AfterValidator(utc_moment)]
"""An archived time, in UTC (one written without an offset is taken as UTC): compared with the
brain's own times, a naive one would fail the restore."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


MAX_BRAIN_METADATA_BYTES: Final = 8192
"""A brain's own metadata (its library type, description, workspace, marks) is a few small keys:
an archive's header is held to that, since another tenant lists a public brain's metadata."""


def _brain_metadata(value: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_BRAIN_METADATA_BYTES:
        raise ValueError(
            f"a brain's metadata holds at most {MAX_BRAIN_METADATA_BYTES:,} bytes of JSON, not {size:,}"
        )
    return value


BrainMetadata = Annotated[dict[str, MetadataValue], AfterValidator(_brain_metadata)]


class BrainInfo(_Record):
    slug: str
    name: str
    visibility: Visibility = Visibility.private
    metadata: BrainMetadata = Field(default_factory=dict)
    embedding_model: str | None = None
    embedding_dim: int | None = None
    created_at: Instant | None = None


class Header(_Record):
    kind: Literal["cairn-archive"]
    format: Literal[1, 2]
    brain: BrainInfo
    exported_at: Instant


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
    created_at: Instant | None = None
    updated_at: Instant | None = None
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
    valid_from: Instant | None = None
    valid_to: Instant | None = None
    sector: str | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    strength: float | None = None
    salience: float | None = None
    superseded_by: str | None = None
    expired_at: Instant | None = None
    created_at: Instant | None = None
    updated_at: Instant | None = None


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
    created_at: Instant


class CollectionRecord(_Record):
    """A Mnemosyne collection of the brain: its items are the documents under its folder."""

    kind: Literal["collection"] = "collection"
    name: str
    description: str = ""
    folder: str


class RawRecord(_Record):
    kind: Literal["raw"] = "raw"
    path: str
    source: str
    data: dict[str, Any]
    stored_at: Instant | None = None


class GapRecord(_Record):
    kind: Literal["gap"] = "gap"
    query_hash: str
    page: str | None = None
    confidence: float | None = None
    sensitivity: str = "internal"
    detected_at: Instant
    resolved_at: Instant | None = None
    resolved_by: str | None = None


class EndRecord(_Record):
    """The last record of a format-2 archive: how many records came between the header and it."""

    kind: Literal["end"] = "end"
    records: int = Field(ge=0)


Record = Annotated[
    DocumentRecord | MemoryRecord | LinkRecord | RawRecord | GapRecord | CollectionRecord,
    Field(discriminator="kind"),
]


_RECORD: TypeAdapter[Record] = TypeAdapter(Record)


KINDS = ("document", "memory", "link", "raw", "gap", "collection")


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
    kept: list[str] = field(default_factory=list)
    """Documents and raw rows the brain changed after the archive was made (`line N: path`): the
    brain's are kept, so restoring an older archive never reverts them."""
    duplicates: list[str] = field(default_factory=list)
    """Documents and raw rows an earlier line of the same archive holds too (`line N: path, as
    line M`): only the first is restored (ArchiveDuplicates)."""


class ArchiveDuplicates:
    """The documents (by path) and raw rows (by path and source) met so far in one archive, so a
    second record of the same one (a hand-made or a concatenated archive) is told apart from a row
    the brain changed after the archive was made: it is reported as a duplicate and not restored.
    Held as 16-byte digests with the first one's line, a few dozen bytes a record."""

    def __init__(self) -> None:
        self.first: dict[bytes, int] = {}

    def earlier(self, line: int, kind: object, path: object, source: object = None) -> int | None:
        """The line of an earlier record of the same document or raw row; None for the first
        (remembered as met at `line`) and for every other kind of record."""
        digest = _digest(kind, path, source)
        if digest is None:
            return None
        first = self.first.setdefault(digest, line)
        return None if first == line else first

    def forget(self, line: int, kind: object, path: object, source: object = None) -> None:
        """The record met at `line` was refused: a later record of the same one is restored."""
        digest = _digest(kind, path, source)
        if digest is not None and self.first.get(digest) == line:
            del self.first[digest]


def _digest(kind: object, path: object, source: object) -> bytes | None:
    if kind not in ("document", "raw") or not isinstance(path, str):
        return None
    key = json.dumps([kind, path, source if kind == "raw" else None], ensure_ascii=False)
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def duplicate_line(line: int, path: object, source: object, first: int) -> str:
    """A duplicate's report line, in the style of `kept`'s: the document's path, and for a raw row
    (`source` not None) its source."""
    raw = f" ({excerpt(str(source))} raw data)" if source is not None else ""
    return f"line {line}: {excerpt(str(path))}{raw}, as line {first}"


def longest_line(max_document_bytes: int) -> int:
    """The most bytes one line of an archive takes when no document holds more than
    `max_document_bytes`: its content as JSON text, each byte at worst a six-character escape
    (`\\u0001`), and a few megabytes for the record's other fields (a raw row's data is at most
    one when compact). A longer line is no record this store would restore: an archive reader
    refuses it before holding it whole (a gzip bomb of one endless line, say)."""
    return 6 * max_document_bytes + 4 * 1024 * 1024


def not_whole(format_: object, last: object, lines: int) -> str | None:
    """Why an archive of `lines` lines (the header's among them) is not whole, given its header's
    format and its last record; None when it is whole, or of a format that cannot tell (1) or that
    this Cairn does not read (the import refuses its header)."""
    if format_ not in FORMATS_READ or format_ == 1:
        return None
    if not isinstance(last, dict) or last.get("kind") != "end":
        return f"the archive ends after line {lines:,} without its end record: it was cut short"
    counted, held = last.get("records"), lines - 2
    if counted != held:
        return f"the end record counts {counted} records and the archive holds {held:,}: it is not whole"
    return None


def is_typed_memory(doc: Document) -> bool:
    """A memory MemoryService stored (and can store again under its id): at its own path."""
    return doc.memory is not None and doc.path == memory_path(doc.memory.type, doc.id)


def memory_input(
    r: MemoryRecord, memory_id: str | None = None, superseded_by: str | None = None
) -> MemoryInput:
    """What MemoryService.store takes to store the archived memory again, under its id (and, when
    it was superseded, the id its successor gets: `superseded_by`, else the archived one)."""
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
        superseded_by=superseded_by or r.superseded_by,
    )


def memory_record(doc: Document, text: str) -> MemoryRecord:
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


def document_record(doc: Document, data: bytes) -> DocumentRecord:
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


def link_record(link: NumberedLink, source: str, target: str) -> LinkRecord:
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


def gap_record(gap: KnowledgeGap, page: str | None) -> GapRecord:
    return GapRecord(
        query_hash=gap.query_hash,
        page=page,
        confidence=gap.confidence_score,
        sensitivity=gap.sensitivity,
        detected_at=gap.detected_at,
        resolved_at=gap.resolved_at,
        resolved_by=gap.resolved_by,
    )


def dumped(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")
