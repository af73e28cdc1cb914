"""The Jeffs Brain wire types shared by the REST API and the canonical MCP surface.

Pinned by the seed's "Response type shapes": snake_case keys, RFC 3339 timestamps with an offset
(`2026-04-18T08:12:00+00:00`). Paths are the brain's canonical relative paths
(`memory/global/x.md`); the MCP tools also accept the seed's leading slash on input.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, field_validator

from cairn.domain.models import MetadataValue
from cairn.services.ingest.inputs import IngestResult


def split_tags(joined: str) -> list[str] | None:
    """metadata.tags as the Jeffs Brain MCP wrapper forwards tags: joined by commas. Read back as
    the tags between the commas, trimmed, empty ones dropped (None when none is left)."""
    return [t.strip() for t in joined.split(",") if t.strip()] or None


def forwarded_tags(tags: list[str] | None) -> list[str] | None:
    """A memory_remember's tags as they reach the store: joined by commas, then read back (a tag
    holding a comma is the tags it joins)."""
    return None if tags is None else split_tags(",".join(tags))


def rfc3339(value: datetime) -> str:
    """`2026-04-18T08:12:00+00:00`: naive datetimes are taken as UTC."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


Timestamp = Annotated[datetime, PlainSerializer(rfc3339, return_type=str)]


class Wire(BaseModel):
    """A reply's shape. Built from a domain object with `model_validate(obj)`: every field is read
    from the attribute of its name (from_attributes), an enum as its value."""

    model_config = ConfigDict(extra="forbid", from_attributes=True)

    @field_validator("*", mode="before")
    @classmethod
    def _enum_value(cls, value: Any) -> Any:
        return value.value if isinstance(value, Enum) else value


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
    brain: str
    """The slug of the brain the hit came from, beside its id (Cairn's addition to the seed's hit)."""
    title: str
    metadata: dict[str, MetadataValue]
    component_scores: dict[str, Any]
    highlights: list[str]
    created_at: Timestamp
    updated_at: Timestamp


class SearchResponse(Wire):
    query: str
    brain_id: str
    hits: list[SearchHitRecord]
    took_ms: float

    @classmethod
    def of(cls, result: Any, brain: str) -> SearchResponse:
        """A search result of one brain, each hit naming it by `brain` (the slug)."""
        hits = [hit_record(hit, brain) for hit in result.hits]
        return cls(query=result.query, brain_id=result.brain_id, hits=hits, took_ms=result.took_ms)


def hit_record(hit: Any, brain: str) -> SearchHitRecord:
    """A search hit (its attributes) of the brain whose slug is `brain`."""
    fields = [name for name in SearchHitRecord.model_fields if name != "brain"]
    return SearchHitRecord(brain=brain, **{name: getattr(hit, name) for name in fields})
