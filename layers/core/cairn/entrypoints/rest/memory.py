"""Extraction, reflection and consolidation over REST; each queues or runs one service call.

POST /v1/brains/{brainId}/extract            202 {mode, ..., job_id}: poll GET /v1/jobs/{job_id}
POST /v1/brains/{brainId}/sessions/{id}/reflect  200 the reflection (closes the session)
POST /v1/brains/{brainId}/consolidate        202 the queued job (GET /v1/jobs/{jobId} to follow it)
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.wire_memory import (
    ExtractMessages,
    ExtractSessionResult,
    ExtractTranscriptResult,
    JobStarted,
    ReflectResponse,
)
from cairn.services.memory.extraction import Said

SessionId = Annotated[str, Path(alias="sessionId", min_length=1, max_length=128, description="ses_...")]


class ExtractBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: ExtractMessages
    actor_id: str | None = Field(default=None, min_length=1, max_length=256)
    session_id: str | None = Field(default=None, min_length=1, max_length=128)


def memory_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}", tags=["memory"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]

    @router.post("/extract", status_code=202, dependencies=[Depends(require_json)])
    def extract(brain: BrainArg, body: ExtractBody) -> ExtractSessionResult | ExtractTranscriptResult:
        """Queue fact extraction: append to a session (skip_extract on all but the last message) or
        store a transcript document (source `extract`)."""
        said = [Said(m.role, m.content) for m in body.messages]
        if body.session_id:
            messages, job = container.extraction.submit_session(brain, body.session_id, said, body.actor_id)
            return ExtractSessionResult.of(messages, job)
        doc, queued = container.extraction.submit_transcript(brain, said, body.actor_id)
        return ExtractTranscriptResult.of(doc, queued)

    @router.post("/sessions/{sessionId}/reflect", response_model_exclude_none=True)
    def reflect(brain: BrainArg, session_id: SessionId) -> ReflectResponse:
        """Close the session and reflect on it; an episode note is written when it is worth one."""
        return ReflectResponse.of(container.reflection.reflect(brain, session_id))

    @router.post("/consolidate", status_code=202)
    def consolidate(brain: BrainArg) -> JobStarted:
        """Queue a consolidation pass: merge near-duplicates, promote stable facts, prune stale
        episodes into archives, compile folder summaries."""
        return JobStarted.of(container.consolidation.queue(brain))

    return router
