"""GET /v1/brains/{brainId}/events: the store's change stream as server-sent events.

Frames: `ready` once attached (the subscription exists before it is sent, so nothing committed
after it is missed), one `change` per committed mutation, `ping` every `events_ping_s` seconds
whatever the traffic. Every frame carries an `id:` that increases per stream.
"""

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.deps import brain_resolver
from cairn.entrypoints.rest.openapi import sse_responses
from cairn.services.events import EventBus

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(frame_id: int, event: str, data: str) -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"id: {frame_id}\nevent: {event}\n{lines}\n".encode()


async def change_stream(
    bus: EventBus, brain_id: str, ping_s: float, request: Request
) -> AsyncIterator[bytes]:
    sub = bus.subscribe(brain_id)
    try:
        frame_id = 1
        yield frame(frame_id, "ready", "ok")
        next_ping = time.monotonic() + ping_s
        while True:
            event = await sub.next(max(0.0, next_ping - time.monotonic()))
            if await request.is_disconnected():
                return
            frame_id += 1
            if event is not None:
                yield frame(frame_id, "change", json.dumps(event.wire(), separators=(",", ":")))
            else:
                next_ping = time.monotonic() + ping_s
                yield frame(frame_id, "ping", "keepalive")
    finally:
        sub.close()


def events_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}", tags=["store"])
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]

    @router.get(
        "/events",
        response_class=StreamingResponse,
        responses=sse_responses("SSE change stream", ("ready", "change", "ping")),
    )
    async def brain_events(brain: BrainArg, request: Request) -> StreamingResponse:
        """Server-sent events: ready, change (one per committed mutation), ping."""
        stream = change_stream(container.events, brain.id, container.settings.events_ping_s, request)
        return StreamingResponse(stream, media_type="text/event-stream", headers=SSE_HEADERS)

    return router
