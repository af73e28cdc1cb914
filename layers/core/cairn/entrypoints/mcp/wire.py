"""Wire shapes of the canonical (Jeffs Brain) MCP surface, pinned by the seed's "Response type shapes".

Keys are snake_case; timestamps are RFC 3339 with an offset (`2026-04-18T08:12:00+00:00`). Paths are
the brain's canonical relative paths (`memory/global/x.md`); tools also accept the seed's leading
slash on input.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.domain.models import Brain, Document, MetadataValue
from cairn.services.ingest import IngestResult
from cairn.services.search import SearchHit, SearchResult


def rfc3339(moment: datetime) -> str:
    """`2026-04-18T08:12:00.123456+00:00`; naive datetimes are taken as UTC."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


class DocumentRecord(BaseModel):
    """The full persisted document (schemas/document.ts)."""

    id: str
    brain_id: str
    title: str
    path: str
    source: Literal["ingest", "extract", "compile", "reflect"]
    content_type: str
    byte_size: int = Field(ge=0)
    checksum_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    metadata: dict[str, MetadataValue]
    commit_sha: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    created_at: str
    updated_at: str
    deleted_at: str | None

    @classmethod
    def of(cls, doc: Document) -> DocumentRecord:
        return cls(
            id=doc.id,
            brain_id=doc.brain_id,
            title=doc.title,
            path=doc.path,
            source=doc.source.value,
            content_type=doc.content_type,
            byte_size=doc.byte_size,
            checksum_sha256=doc.checksum_sha256,
            metadata=dict(doc.metadata),
            commit_sha=doc.commit_sha,
            created_at=rfc3339(doc.created_at),
            updated_at=rfc3339(doc.updated_at),
            deleted_at=rfc3339(doc.deleted_at) if doc.deleted_at else None,
        )


class IngestResponse(BaseModel):
    """IngestCompletedResponse (schemas/knowledge.ts); loose: unknown keys are preserved."""

    model_config = ConfigDict(extra="allow")

    status: Literal["completed", "queued"] = "completed"
    document_id: str
    path: str
    hash: str
    chunk_count: int = Field(ge=0)
    embedded_count: int = Field(ge=0)
    duration_ms: int = Field(ge=0)
    reused: bool = False

    @classmethod
    def of(cls, result: IngestResult) -> IngestResponse:
        return cls(
            status="queued" if result.status == "queued" else "completed",
            document_id=result.document.id,
            path=result.document.path,
            hash=result.hash,
            chunk_count=result.chunk_count,
            embedded_count=result.embedded_count,
            duration_ms=result.duration_ms,
            reused=result.reused,
        )


class IngestUrlServer(BaseModel):
    """memory_ingest_url's server path: `{path: 'server', result: IngestResponse}`."""

    path: Literal["server"] = "server"
    result: IngestResponse


class SearchHitRecord(BaseModel):
    score: float
    path: str
    content: str
    chunk_id: str
    document_id: str
    brain_id: str
    title: str
    created_at: str
    updated_at: str
    metadata: dict[str, MetadataValue]
    component_scores: dict[str, float | int | None]

    @classmethod
    def of(cls, hit: SearchHit) -> SearchHitRecord:
        return cls(
            score=hit.score,
            path=hit.path,
            content=hit.content,
            chunk_id=hit.chunk_id,
            document_id=hit.document_id,
            brain_id=hit.brain_id,
            title=hit.title,
            created_at=rfc3339(hit.created_at),
            updated_at=rfc3339(hit.updated_at),
            metadata=dict(hit.metadata),
            component_scores=dict(hit.component_scores),
        )


class SearchResponse(BaseModel):
    query: str
    brain_id: str
    hits: list[SearchHitRecord]
    took_ms: float

    @classmethod
    def of(cls, result: SearchResult) -> SearchResponse:
        return cls(
            query=result.query,
            brain_id=result.brain_id,
            hits=[SearchHitRecord.of(h) for h in result.hits],
            took_ms=result.took_ms,
        )


class BrainRecord(BaseModel):
    id: str
    slug: str
    name: str
    visibility: Literal["private", "tenant", "public"]
    embedding_model: str
    embedding_dim: int
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, brain: Brain) -> BrainRecord:
        return cls(
            id=brain.id,
            slug=brain.slug,
            name=brain.name,
            visibility=brain.visibility.value,
            embedding_model=brain.embedding_model,
            embedding_dim=brain.embedding_dim,
            created_at=rfc3339(brain.created_at),
            updated_at=rfc3339(brain.updated_at),
        )


class BrainList(BaseModel):
    items: list[BrainRecord]
