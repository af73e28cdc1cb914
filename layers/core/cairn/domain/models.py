"""The shared domain model every surface maps onto (docs/ARCHITECTURE.md).

Persistence adapters store these models as JSON; surfaces translate them into each seed's
wire shapes. Fields a given issue does not use yet are kept so that later surfaces and jobs
share one model.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MetadataValue = str | int | float | bool | None


def _in_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


Moment = Annotated[datetime, AfterValidator(_in_utc)]
"""An instant as a record holds it. Cairn writes every one in UTC with its offset; one without an
offset (a record edited by hand, or damaged) is read as UTC, so that comparing it with the others
cannot fail."""


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Visibility(StrEnum):
    private = "private"
    tenant = "tenant"
    public = "public"


class Brain(Model):
    id: str
    slug: str
    name: str
    visibility: Visibility = Visibility.private
    owner_tenant: str = "local"
    owner: str | None = None
    """The subject that created it; a private brain is theirs alone (None: the whole tenant's)."""
    embedding_model: str
    embedding_dim: int
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    created_at: Moment
    updated_at: Moment
    deleted_at: Moment | None = None
    """Set when the brain is being deleted: it is gone for every caller while its data is purged
    (services/erasure/service.py)."""


class DocumentSource(StrEnum):
    ingest = "ingest"
    extract = "extract"
    compile = "compile"
    reflect = "reflect"


class DocumentStatus(StrEnum):
    completed = "completed"
    queued = "queued"
    failed = "failed"


class MemoryType(StrEnum):
    event = "event"
    fact = "fact"
    decision = "decision"
    status = "status"
    note = "note"


class EarlierEnd(Model):
    """What a memory's end was before a value stored later as history ended it sooner (`at`)."""

    at: Moment
    valid_to: Moment | None = None


class MemoryFacet(Model):
    """The typed part of a small document that is a *memory* (zengram, ThoughtMCP)."""

    type: MemoryType = MemoryType.note
    key: str | None = None
    subject: str | None = None
    status_value: str | None = None
    importance: float | None = None
    category: str | None = None
    sector: str | None = None
    strength: float | None = None
    salience: float | None = None
    source_agent: str | None = None
    client_id: str | None = None
    valid_from: Moment | None = None
    valid_to: Moment | None = None
    superseded_by: str | None = None
    superseded_at: Moment | None = None
    earlier_ends: list[EarlierEnd] | None = None
    """Each time history stored later moved `valid_to` sooner, the end it had until then, oldest
    first: what Cairn knew at a moment before it (services/search/as_of.py `AsOf.holds`). At most
    64 are kept (services/memory/earlier_ends.py)."""
    text_at: Moment | None = None
    """When an update last changed the text in place (None: as first written): what Cairn knew
    before then was other text (`AsOf.holds`)."""
    expired_at: Moment | None = None
    """Soft-expired by consolidation (an event nobody read); kept, no longer current."""
    knowledge_category: str | None = None
    content_hash: str | None = None
    """Of the stored (scrubbed) text: duplicates are found by it within a client and type."""
    access_count: int = 0
    last_access: Moment | None = None
    user_id: str | None = None
    """ThoughtMCP's userId: whose memory it is (services/thoughtmcp/memories.py); only they recall
    it there."""
    session_id: str | None = None
    keywords: list[str] | None = None
    context: str | None = None

    @property
    def current(self) -> bool:
        """Neither superseded nor expired: what searches see unless asked for history."""
        return self.superseded_by is None and self.expired_at is None


class Document(Model):
    """Everything stored is a document; `version` increments on every write (OCC)."""

    id: str
    brain_id: str
    path: str
    title: str
    content_type: str = "text/markdown"
    source: DocumentSource = DocumentSource.ingest
    checksum_sha256: str
    byte_size: int
    blob_key: str
    version: int = 0
    commit_sha: str
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    memory: MemoryFacet | None = None
    status: DocumentStatus = DocumentStatus.completed
    error: str | None = None
    chunk_count: int = 0
    created_at: Moment
    updated_at: Moment
    deleted_at: Moment | None = None
    deleted_reason: str | None = None
    """Why a soft delete happened when a job did it (`merged`, `pruned`), for the record."""
    replaced_by: str | None = None
    """The id of the document that now carries this one's content (merge, prune into an archive)."""

    @property
    def owner(self) -> str | None:
        """Whom the item belongs to inside its brain where a surface promises that (a ThoughtMCP
        memory's userId); None: whoever may read the brain (auth/access.py decides both)."""
        return self.memory.user_id if self.memory is not None else None


class Chunk(Model):
    """A span of a document's text, with the filter fields copied from its document."""

    id: str
    brain_id: str
    document_id: str
    path: str
    ordinal: int
    text: str
    start: int = 0
    end: int = 0
    title: str = ""
    context: str = ""
    """Index-only text that situates the chunk (BM25 only; services/documents/siblings.py); never returned."""
    fingerprint: str = ""
    """What the chunk was indexed from, summarised by its writer (services/documents/indexing.py), so a
    rewrite can leave it alone or reuse its vector; empty when unknown."""
    tags: list[str] = Field(default_factory=list)
    type: str | None = None
    scope: str | None = None
    sector: str | None = None
    valid_from: Moment | None = None
    valid_to: Moment | None = None
    active: bool = True
    """False while staged (a queued ingest not yet live): never in results."""
    current: bool = True
    """False once its memory is superseded or expired: in results only when history is asked for."""
    facets: dict[str, str] = Field(default_factory=dict)
    """Keyword fields of its memory (type, client_id, source_agent, category, ...) to filter on."""
    importance: float | None = None
    created_at: Moment

    @property
    def owner(self) -> str | None:
        """Its document's owner (Document.owner), kept as the facet OWNER_FACET."""
        return self.facets.get(OWNER_FACET)


OWNER_FACET = "user_id"
"""The chunk facet naming an owned item's owner (its document's memory.user_id)."""


class Link(Model):
    """A typed, weighted, temporal edge between documents or entities."""

    id: str
    brain_id: str
    source_id: str
    target_id: str
    kind: str
    weight: float = 1.0
    valid_from: Moment | None = None
    valid_to: Moment | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    created_at: Moment


class Entity(Model):
    """Something memories mention (a client, person, technology, ...): services/memory/entities.py."""

    id: str
    brain_id: str
    name: str
    """The canonical name; lookups by it or an alias ignore case."""
    kind: str = "thing"
    """The entity type (services/memory/entities.py ENTITY_TYPES: client, person, technology, ...)."""
    aliases: list[str] = Field(default_factory=list)
    mention_count: int = 0
    """How many memories mention it (each memory counted once)."""
    first_seen: Moment | None = None
    last_seen: Moment | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    created_at: Moment
    updated_at: Moment


class SessionStatus(StrEnum):
    open = "open"
    closed = "closed"


class ReflectionStatus(StrEnum):
    completed = "completed"
    no_result = "no_result"
    failed = "failed"


class Reflection(Model):
    """What reflecting on a closed session concluded; kept on the session."""

    status: ReflectionStatus
    outcome: str | None = None
    should_record_episode: bool = False
    path: str | None = None
    retry_feedback: str | None = None
    summary: str | None = None
    episode_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    reflected_by: str | None = None
    reflected_at: Moment


class Session(Model):
    id: str
    brain_id: str
    title: str | None = None
    actor_id: str | None = None
    status: SessionStatus = SessionStatus.open
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    created_at: Moment
    ended_at: Moment | None = None
    reflection: Reflection | None = None
    extracted_upto: int = 0
    """How many of the session's messages fact extraction has covered."""


class MessageRole(StrEnum):
    system = "system"
    user = "user"
    assistant = "assistant"
    tool = "tool"


class Message(Model):
    id: str
    session_id: str
    brain_id: str
    role: MessageRole
    content: str
    name: str | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    created_at: Moment


class GapStatus(StrEnum):
    open = "open"
    resolved = "resolved"


class Gap(Model):
    """A question the brain could not answer well: a knowledge gap to fill."""

    id: str
    brain_id: str
    query: str
    context: str | None = None
    status: GapStatus = GapStatus.open
    created_at: Moment
    resolved_at: Moment | None = None


class RawData(Model):
    """The original bytes a document was derived from, per (document, source)."""

    id: str
    brain_id: str
    document_id: str
    source: str
    content_type: str
    blob_key: str
    byte_size: int
    created_at: Moment


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    completed = "completed"
    failed = "failed"


class Job(Model):
    id: str
    kind: str
    brain_id: str | None = None
    principal: str | None = None
    status: JobStatus = JobStatus.queued
    progress: float = 0.0
    message: str | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    attempts: int = 0
    created_at: Moment
    updated_at: Moment
