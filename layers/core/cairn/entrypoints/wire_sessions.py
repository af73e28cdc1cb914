"""Session wire types shared by the REST API and the canonical MCP surface (seed: schemas/session.ts).

SessionMessageRecord is the seed's MessageSchema: `name` appears only when set, and the metadata
bag accepted on create (actor_id, skip_extract, ...) is never part of it. The session recall
payload is `{chunks: [...]}`; each chunk is a search hit of the chunk that matched, with the
fused session score (docs/SESSIONS.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cairn.entrypoints.wire import SearchHitRecord, Timestamp, Wire, hit_record
from cairn.services.search.service import SearchHit

Role = Literal["system", "user", "assistant", "tool"]


class SessionRecord(Wire):
    id: str
    brain_id: str
    title: str | None
    actor_id: str | None
    status: Literal["open", "closed"]
    created_at: Timestamp
    ended_at: Timestamp | None


class SessionMessageRecord(Wire):
    id: str
    session_id: str
    role: Role
    content: str
    name: str | None = Field(default=None, exclude_if=lambda name: name is None)
    created_at: Timestamp


class SessionView(Wire):
    session: SessionRecord
    messages: list[SessionMessageRecord]


class SessionRecallResponse(Wire):
    chunks: list[SearchHitRecord]

    @classmethod
    def of(cls, chunks: list[SearchHit], brain: str) -> SessionRecallResponse:
        """The recalled hits of the brain whose slug is `brain`, each naming it."""
        return cls(chunks=[hit_record(c, brain) for c in chunks])
