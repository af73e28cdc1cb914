"""POST /v1/brains/{brainId}/ask: a grounded answer streamed as server-sent events.

Events, each `event: <type>` with a JSON `data:` line: `retrieve` {chunks: RetrievedChunk[]},
`answer_delta` {delta}, `citation` (AskCitationEvent), `done` {answer, model}, or `error`
{code, message, retryable}, after which the stream ends.
"""

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.rest.events import SSE_HEADERS, frame
from cairn.entrypoints.rest.openapi import sse_responses
from cairn.services.search.ask import AskEvent

ASK_EVENTS = ("retrieve", "answer_delta", "citation", "done", "error")


class AskBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=8192)
    top_k: int = Field(default=8, ge=1, le=50)


async def ask_frames(events: AsyncIterator[AskEvent]) -> AsyncIterator[bytes]:
    frame_id = 0
    async for event in events:
        frame_id += 1
        yield frame(frame_id, event.type, json.dumps(event.data, separators=(",", ":")))


def ask_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}", tags=["ask"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]

    @router.post(
        "/ask",
        dependencies=[Depends(require_json)],
        response_class=StreamingResponse,
        responses=sse_responses("SSE ask stream", ASK_EVENTS),
    )
    async def ask(brain: BrainArg, body: AskBody) -> StreamingResponse:
        """Answer from the brain's memories: retrieve, answer_delta, citation, done (or error)."""
        container.ask.check(body.query, body.top_k)  # a 400 now, not a broken stream
        events = container.ask.ask(brain, body.query, top_k=body.top_k)
        return StreamingResponse(ask_frames(events), media_type="text/event-stream", headers=SSE_HEADERS)

    return router
