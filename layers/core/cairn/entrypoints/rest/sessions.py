"""/v1/brains/{brainId}/sessions: create, append messages, read, recall within, close.

A session is addressed through its brain; a session of another brain is 404, as if unknown.
Message metadata (actor_id, skip_extract, ...) is accepted and stored, never returned.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.models import Brain, MetadataValue
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.wire_sessions import (
    Role,
    SessionMessageRecord,
    SessionRecallResponse,
    SessionRecord,
    SessionView,
)

Metadata = Annotated[dict[str, MetadataValue] | None, Field(max_length=64)]
SessionId = Annotated[str, Path(alias="sessionId", min_length=1, max_length=128, description="ses_...")]


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(default=None, min_length=1, max_length=512)
    actor_id: str | None = Field(default=None, min_length=1, max_length=256)
    metadata: Metadata = None


class CreateMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = Field(min_length=1, max_length=1_000_000)
    name: str | None = Field(default=None, min_length=1, max_length=128, description="Tool name (role tool)")
    metadata: Metadata = None


class RecallBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4096)
    top_k: int = Field(default=10, ge=1, le=50)
    scope: Literal["all", "global", "project", "agent"] | None = None


def sessions_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}/sessions", tags=["sessions"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]
    sessions = container.sessions

    @router.post("", status_code=201, dependencies=[Depends(require_json)])
    def create_session(brain: BrainArg, body: CreateSession) -> SessionRecord:
        """Open a session; metadata is stored and never returned."""
        session = sessions.create(brain, title=body.title, actor_id=body.actor_id, metadata=body.metadata)
        return SessionRecord.model_validate(session)

    @router.post("/{sessionId}/messages", status_code=201, dependencies=[Depends(require_json)])
    def append_message(brain: BrainArg, session_id: SessionId, body: CreateMessage) -> SessionMessageRecord:
        """Append a message; 409 conflict once the session is closed."""
        message = sessions.append(
            brain, session_id, body.role, body.content, name=body.name, metadata=body.metadata
        )
        return SessionMessageRecord.model_validate(message)

    @router.get("/{sessionId}")
    def get_session(brain: BrainArg, session_id: SessionId) -> SessionView:
        session, messages = sessions.get(brain, session_id)
        return SessionView(
            session=SessionRecord.model_validate(session),
            messages=[SessionMessageRecord.model_validate(m) for m in messages],
        )

    @router.post("/{sessionId}/recall", dependencies=[Depends(require_json)])
    def recall(brain: BrainArg, session_id: SessionId, body: RecallBody) -> SessionRecallResponse:
        """Search weighted by the session's recent messages (docs/SESSIONS.md)."""
        chunks = sessions.recall(brain, session_id, body.query, top_k=body.top_k, scope=body.scope)
        return SessionRecallResponse.of(chunks, brain.slug)

    @router.post("/{sessionId}/close")
    def close_session(brain: BrainArg, session_id: SessionId) -> SessionRecord:
        """Close the session (sets ended_at); closing again returns it unchanged."""
        return SessionRecord.model_validate(sessions.close(brain, session_id))

    return router
