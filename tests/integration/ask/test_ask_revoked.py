"""A key revoked while its answer streams ends the answer: the REST stream with an `error` event
(forbidden), memory_ask with an error result, and the model is asked for no more of it, where the
whole answer went on to the caller after the revocation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cairn.auth import access
from cairn.auth.principal import READ, WRITE
from cairn.ports.generator import Answer, Delta, Done, GenerationEvent, Passage, collect
from tests.integration.ask.test_ask import sse_events
from tests.integration.mcp.conftest import LiveServer, start_server

pytestmark = pytest.mark.anyio
TOKEN = "ask-revoked-static-token-0123456789"


class RevokingGenerator:
    """Two deltas, then the caller's key is revoked (as by an admin meanwhile), then eight more."""

    model_id = "revoking"

    def __init__(self, revoke: Any) -> None:
        self.revoke = revoke
        self.sent = 0

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        words = [f"w{n} " for n in range(10)]
        for n, word in enumerate(words):
            if n == 2:
                self.revoke()
            self.sent += 1
            yield Delta(word)
        yield Done("".join(words), self.model_id)

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    for server in start_server(tmp_path, token=TOKEN):
        c = server.container
        brain = c.brains.create("Notes", slug="notes", visibility="tenant")
        c.documents.write(brain, "memory/global/run.md", b"I finished the 10k route in under 55 minutes.")
        yield server


def _key(live: LiveServer) -> tuple[str, RevokingGenerator]:
    made = live.container.keys.create(name="asker", tenant="local", scopes=[READ, WRITE])

    def revoke() -> None:
        with access.as_system():
            live.container.keys.revoke(made.key.id)

    generator = RevokingGenerator(revoke)
    live.container.ask.generator = generator
    return made.plaintext, generator


def test_the_rest_stream_ends_once_the_key_is_revoked(live: LiveServer) -> None:
    key, generator = _key(live)
    response = httpx.post(
        f"{live.base}/v1/brains/notes/ask",
        json={"query": "how long did the 10k route take"},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    events = sse_events(response.text)

    kinds = [kind for kind, _ in events]
    assert kinds == ["retrieve", "answer_delta", "answer_delta", "error"], kinds
    assert events[-1][1]["code"] == "forbidden" and events[-1][1]["retryable"] is False
    assert generator.sent <= 4  # the model was asked for no more after the check


async def test_memory_ask_ends_with_an_error_once_the_key_is_revoked(live: LiveServer) -> None:
    key, generator = _key(live)
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=30)
    async with Client(streamable_http_client(live.url, http_client=http)) as client:
        result = await client.call_tool(
            "memory_ask",
            {"query": "how long did the 10k route take", "brain": "notes"},
            progress_callback=on_progress,
        )

    assert result.is_error
    assert json.loads(result.content[0].text)["code"] == "forbidden"  # type: ignore[union-attr]
    assert seen == ["w0 ", "w1 "] and generator.sent <= 4
