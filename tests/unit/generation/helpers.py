"""Scripted OpenAI-compatible servers for httpx.MockTransport, and a sleep that only records."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx

from cairn.adapters.local.openai_compat import OpenAICompatGenerator
from cairn.ports.generator import Delta, GenerationError, GenerationEvent, Passage

SECRET = "sk-test-5ecret-do-not-leak"

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


def frame(content: str | None = None, finish: str | None = None, **extra: Any) -> str:
    delta = {} if content is None else {"content": content}
    return "data: " + json.dumps({"choices": [{"delta": delta, "finish_reason": finish}], **extra}) + "\n\n"


def sse_body(*pieces: str, done: bool = True, finish: str | None = "stop") -> bytes:
    body = frame(None) + "".join(frame(p) for p in pieces)
    if finish:
        body += frame(None, finish)
    if done:
        body += "data: [DONE]\n\n"
    return body.encode()


def sse(*pieces: str, done: bool = True, finish: str | None = "stop") -> httpx.Response:
    return httpx.Response(200, content=sse_body(*pieces, done=done, finish=finish), headers=SSE_HEADERS)


SSE_HEADERS = {"content-type": "text/event-stream"}


def broken_stream(*pieces: str, error: Exception) -> httpx.Response:
    """A 200 stream that sends some frames, then fails the way a dropped connection does."""

    async def body() -> AsyncIterator[bytes]:
        yield frame(None).encode()
        for piece in pieces:
            yield frame(piece).encode()
        raise error

    return httpx.Response(200, content=body(), headers=SSE_HEADERS)


class Server:
    """Answers each request with the next scripted reply (the last one repeats) and records it."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        return reply(request)

    def body(self, i: int = -1) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.requests[i].content)
        return parsed


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def generator(server: Server, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAICompatGenerator:
    return OpenAICompatGenerator(
        "http://model.test/v1",
        "test-model",
        api_key=SECRET,
        transport=httpx.MockTransport(server),
        sleep=sleeps or Sleeps(),
        **kwargs,
    )


async def drain(
    gen: OpenAICompatGenerator, passages: Sequence[Passage], question: str = "q?"
) -> tuple[list[GenerationEvent], GenerationError | None]:
    """Every event the caller saw, and the error that ended the stream (None if it completed)."""
    events: list[GenerationEvent] = []
    try:
        async for event in gen.stream(question, passages):
            events.append(event)
    except GenerationError as exc:
        return events, exc
    return events, None


def text_of(events: Sequence[GenerationEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, Delta))
