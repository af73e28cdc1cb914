"""GET /v1/brains/{brainId}/events: the store's change stream as server-sent events.

Frames: `ready` once attached (the subscription exists before it is sent, so nothing committed
after it is missed), one `change` per committed mutation, `ping` every `events_ping_s` seconds
whatever the traffic. Every frame carries an `id:` that increases per stream.

On AWS (`backend = "aws"`) the route answers 405 instead: API Gateway and Mangum buffer a response
whole, so an endless stream would only end at the integration timeout as a 5xx, and the
in-process bus never sees the writes other Lambda instances commit.
"""

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse

from cairn.auth import access
from cairn.container import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.deps import brain_resolver
from cairn.entrypoints.rest.openapi import sse_responses
from cairn.entrypoints.rest.problems import PROBLEM_JSON, problem
from cairn.services.events import EventBus

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
NOT_ON_AWS = (
    "the change stream is not served on AWS: API Gateway buffers responses, so a stream would only "
    "end at its 29 s timeout, and Lambda instances do not share change events; poll the document "
    "listing or stat the paths you watch instead"
)


def frame(frame_id: int, event: str, data: str) -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"id: {frame_id}\nevent: {event}\n{lines}\n".encode()


def still_allowed(container: Container, brain: Brain) -> Callable[[], bool]:
    """Whether the caller that opened the stream may still read it: its key not revoked since, the
    brain still readable to it (not made private, handed over or deleted meanwhile)."""
    now = access.current()
    if now is None:
        return lambda: True
    principal = now.principal
    return lambda: (
        not container.keys.revoked(principal.subject) and container.brains.still_readable(brain.id, principal)
    )


async def change_stream(
    bus: EventBus, brain: Brain, ping_s: float, request: Request, allowed: Callable[[], bool]
) -> AsyncIterator[bytes]:
    """The frames; the stream ends before any frame once `allowed` says the caller may no longer
    read the brain (what the request was authorised for at its start holds no longer)."""
    sub = bus.subscribe(brain.id, access.seer(brain))  # the caller hears of what it may see
    try:
        frame_id = 1
        yield frame(frame_id, "ready", "ok")
        next_ping = time.monotonic() + ping_s
        while True:
            event = await sub.next(max(0.0, next_ping - time.monotonic()))
            if await request.is_disconnected() or not await anyio.to_thread.run_sync(allowed):
                return
            frame_id += 1
            if event is not None:
                yield frame(frame_id, "change", json.dumps(event.wire(), separators=(",", ":")))
            else:
                next_ping = time.monotonic() + ping_s
                yield frame(frame_id, "ping", "keepalive")
    finally:
        sub.close()


class ProblemResponse(JSONResponse):
    media_type = PROBLEM_JSON


def events_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}", tags=["store"])
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]
    if container.options.http.on_aws:
        refusal = {
            "description": f"method_not_allowed: {NOT_ON_AWS}",
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
            "headers": {"Allow": {"description": "Empty: no method", "schema": {"type": "string"}}},
        }

        @router.get(
            "/events",
            name="brain_events",
            status_code=405,
            response_class=ProblemResponse,
            responses={405: refusal},
        )
        async def brain_events_on_aws(brain: BrainArg) -> JSONResponse:
            """Not served on AWS: poll listings or stat documents instead."""
            response = problem(405, NOT_ON_AWS, "method_not_allowed")
            response.headers["Allow"] = ""  # RFC 9110: the resource allows no method here
            return response

        return router

    @router.get(
        "/events",
        response_class=StreamingResponse,
        responses=sse_responses("SSE change stream", ("ready", "change", "ping")),
    )
    async def brain_events(brain: BrainArg, request: Request) -> StreamingResponse:
        """Server-sent events: ready, change (one per committed mutation), ping."""
        ping_s = container.options.http.events_ping_s
        stream = change_stream(container.events, brain, ping_s, request, still_allowed(container, brain))
        return StreamingResponse(stream, media_type="text/event-stream", headers=SSE_HEADERS)

    return router
