"""GET /v1/brains/{brainId}/events: the store's change stream as server-sent events.

Frames: `ready` once attached (the subscription exists before it is sent, so nothing committed
after it is missed), one `change` per committed mutation (by this process, or, on the embedded
store, by another process on its data directory within about FOLLOW_S: services/events.py),
`ping` every `events_ping_s` seconds whatever the traffic. Every frame carries an `id:` that
increases per stream.

On AWS (`backend = "aws"`) the route answers 405 instead: API Gateway and Mangum buffer a response
whole, so an endless stream would only end at the integration timeout as a 5xx, and the
in-process bus never sees the writes other Lambda instances commit.
"""

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from cairn import off_loop
from cairn.auth import access
from cairn.container import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver
from cairn.entrypoints.rest.openapi import sse_responses
from cairn.entrypoints.rest.problems import PROBLEM_JSON, problem
from cairn.entrypoints.stopping import STOPPING
from cairn.services.events import FOLLOW_S, EventBus, Subscription
from cairn.services.still_allowed import StillAllowed

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
STOP_CHECK_S = 1.0  # how soon a stream ends once the server is shutting down
NOT_ON_AWS = (
    "the change stream is not served on AWS: API Gateway buffers responses, so a stream would only "
    "end at its 29 s timeout, and Lambda instances do not share change events; poll the document "
    "listing or stat the paths you watch instead"
)


def frame(frame_id: int, event: str, data: str) -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"id: {frame_id}\nevent: {event}\n{lines}\n".encode()


MAX_STREAMS = 16
"""Change streams one caller may hold open on one server at once: each costs the server a check
of the caller's access now and then, and a queue."""


async def change_stream(
    bus: EventBus, sub: Subscription, ping_s: float, request: Request, allowed: StillAllowed
) -> AsyncIterator[bytes]:
    """The frames of a reserved subscription; the stream ends before any frame once `allowed` says
    the caller may no longer read the brain (what the request was authorised for at its start
    holds no longer)."""
    try:
        await off_loop.run_sync(bus.follow)  # other processes' news from before it is not its news
        sub.arm()
        frame_id = 1
        yield frame(frame_id, "ready", "ok")
        next_ping = time.monotonic() + ping_s
        while True:
            remaining = max(0.0, next_ping - time.monotonic())
            event = await sub.next(min(remaining, FOLLOW_S if bus.follows else STOP_CHECK_S))
            if await request.is_disconnected() or STOPPING.is_set():
                return  # the caller left, or the server is shutting down (it waits for this stream)
            if event is None and time.monotonic() < next_ping:
                await off_loop.run_sync(bus.follow)  # what other processes committed meanwhile
                continue
            if not allowed.fresh() and not await off_loop.run_sync(allowed.check):
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
    router = APIRouter(prefix="/v1/brains/{brainId}", tags=["store"], route_class=ScopedRoute)
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
    async def brain_events(brain: BrainArg, request: Request) -> Response:
        """Server-sent events: ready, change (one per committed mutation), ping."""
        caller = access.started_by() or ""  # who holds the stream: the caller's tenant/subject
        # it hears what it may see; its slot is taken now, not once the response starts streaming
        sub = container.events.reserve(brain.id, access.seer(brain), caller, MAX_STREAMS)
        if sub is None:
            response = problem(
                429,
                f"this caller already holds {MAX_STREAMS} change streams open on this server, the most "
                "it may: close one first",
                "rate_limited",
            )
            response.headers["Retry-After"] = "5"
            return response
        ping_s = container.options.http.events_ping_s
        allowed = StillAllowed(container.keys, container.brains, brain)
        stream = change_stream(container.events, sub, ping_s, request, allowed)
        return StreamingResponse(stream, media_type="text/event-stream", headers=SSE_HEADERS)

    return router
