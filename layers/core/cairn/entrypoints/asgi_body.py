"""Reading the start of a request body in ASGI middleware or an endpoint and handing it on whole."""

from __future__ import annotations

from starlette.types import Message, Receive


async def buffered(receive: Receive, limit: int) -> tuple[bytes, Receive]:
    """Read the request body up to `limit` + 1 bytes (a caller tells a larger one by its length)
    and return it with a `receive` that replays it, then goes on with what was not read."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more and size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return body, replay
