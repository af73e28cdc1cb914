"""The Jeffs Brain wire types shared by the REST API and the canonical MCP surface.

Pinned by the seed's "Response type shapes": snake_case keys, RFC 3339 timestamps with an offset
(`2026-04-18T08:12:00+00:00`). Paths are the brain's canonical relative paths
(`memory/global/x.md`); the MCP tools also accept the seed's leading slash on input.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

from cairn.domain.models import Brain, Document, MetadataValue
from cairn.services.ingest.inputs import IngestResult
from cairn.services.search.service import SearchHit, SearchResult


def rfc3339(value: datetime) -> str:
    """`2026-04-18T08:12:00+00:00`: naive datetimes are taken as UTC."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


Timestamp = Annotated[datetime, PlainSerializer(rfc3339, return_type=str)]


class Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BrainRecord(Wire):
    id: str
    slug: str
    name: str
    visibility: Literal["private", "tenant", "public"]
    embedding_model: str
    embedding_dim: int
    metadata: dict[str, MetadataValue]
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, brain: Brain) -> BrainRecord:
        return cls(
            id=brain.id,
            slug=brain.slug,
            name=brain.name,
            visibility=brain.visibility.value,
            embedding_model=brain.embedding_model,
            embedding_dim=brain.embedding_dim,
            metadata=dict(brain.metadata),
            created_at=brain.created_at,
            updated_at=brain.updated_at,
        )


class BrainList(Wire):
    items: list[BrainRecord]


class DocumentRecord(Wire):
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
    created_at: Timestamp
    updated_at: Timestamp
    deleted_at: Timestamp | None

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
            created_at=doc.created_at,
            updated_at=doc.updated_at,
            deleted_at=doc.deleted_at,
        )


class IngestResponse(BaseModel):
    """The seed's IngestCompletedResponse (its schema is loose: extra keys allowed)."""

    model_config = ConfigDict(extra="allow")

    status: Literal["completed", "queued"]
    job_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
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
            document_id=result.document_id,
            path=result.path,
            hash=result.hash,
            chunk_count=result.chunk_count,
            embedded_count=result.embedded_count,
            duration_ms=result.duration_ms,
            reused=result.reused,
            job_id=result.job_id,
        )


class SearchHitRecord(Wire):
    score: float
    path: str
    content: str
    chunk_id: str
    document_id: str
    brain_id: str
    title: str
    metadata: dict[str, MetadataValue]
    component_scores: dict[str, Any]
    created_at: Timestamp
    updated_at: Timestamp

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
            metadata=dict(hit.metadata),
            component_scores=dict(hit.component_scores),
            created_at=hit.created_at,
            updated_at=hit.updated_at,
        )


class SearchResponse(Wire):
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
