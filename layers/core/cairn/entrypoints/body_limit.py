"""A cap on every request body, enforced before anything parses it.

A Content-Length above the cap is refused at once. A body without one (chunked transfer) is counted
as it arrives and refused as soon as it passes the cap, whatever the application was doing with it:
the application's own answer to the interrupted read (FastAPI's 400, an SDK's 500) is replaced by
the refusal. Refusals are 413, Problem+JSON `payload_too_large` everywhere but on the MCP
endpoints, which get a JSON-RPC error. Whatever the client still sends after a refusal is
discarded by the server, not buffered, so the client reads the 413 once it stops sending.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cairn.entrypoints.rest.problems import is_mcp, mcp_error, problem

LimitFor = Callable[[Scope], int | None]
"""The cap for a request, or None for a route that reads its body under a cap of its own."""


class BodyTooLarge(HTTPException):
    """Raised into the application by `receive`; an HTTPException so frameworks pass it through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body exceeds {limit} bytes")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limit_for: LimitFor) -> None:
        self.app, self.limit_for = app, limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limit_for(scope) if scope["type"] == "http" else None
        if limit is None:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await refusal(scope, limit)(scope, receive, send)
            return
        received = 0
        tripped = refused = started = False

        async def counted() -> Message:
            nonlocal received, tripped
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    tripped = True
                    raise BodyTooLarge(limit)
            return message

        async def guarded(message: Message) -> None:
            nonlocal refused, started
            if tripped and not started:
                if not refused:
                    refused = True
                    await refusal(scope, limit)(scope, receive, send)
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except BodyTooLarge:
            if started:
                raise
            if not refused:
                await refusal(scope, limit)(scope, receive, send)


def refusal(scope: Scope, limit: int) -> Response:
    detail = f"request body exceeds {limit} bytes"
    if is_mcp(scope.get("path", "")):
        return mcp_error(413, detail)
    return problem(413, detail, "payload_too_large")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None
    return None
