"""memory_ask when the OpenAI-compatible model server fails: a stall, HTTP 500s, broken streams.

Cairn runs for real on 127.0.0.1 (uvicorn thread, fake storage) with OpenAICompatGenerator pointed
at a raw asyncio chat-completions server run by the test on another free 127.0.0.1 port. Both
REST (SSE) and MCP (the official client) must surface the seed's error shape, and nothing may be
written: documents, chunks, blobs, records and search results are the same afterwards.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from cairn.adapters.local.openai_compat import OpenAICompatGenerator
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.models import generator_for
from cairn.config import Settings
from cairn.ports.chunks import ChunkFilter
from cairn.ports.generator import Generator
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.container import fake_adapters
from tests.fakes.records import MemoryRecordStore
from tests.integration.ask.test_ask import sse_events
from tests.integration.mcp.conftest import ServerThread

pytestmark = pytest.mark.anyio

SECRET = "sk-integration-5ecret"
QUESTION = "how long did the 10k route take"
Behaviour = Callable[[asyncio.StreamWriter], Awaitable[None]]


@dataclass
class FakeModel:
    """A chat-completions endpoint on 127.0.0.1 that answers every request with `behaviour`."""

    behaviour: Behaviour
    requests: list[bytes] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.requests.append(head + await reader.readexactly(_content_length(head)))
            await self.behaviour(writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the generator hung up first (it timed out): that is the point of some tests
        finally:
            writer.close()


def _content_length(head: bytes) -> int:
    for line in head.lower().split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name == b"content-length":
            return int(value)
    return 0


@asynccontextmanager
async def serving(model: FakeModel) -> AsyncIterator[FakeModel]:
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        await model.handle(reader, writer)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    model.port = server.sockets[0].getsockname()[1]
    try:
        yield model
    finally:
        for task in handlers:
            task.cancel()  # a stalled handler would otherwise outlive the test
        server.close()
        await server.wait_closed()


def respond(status: str, headers: dict[str, str], body: bytes = b"") -> Behaviour:
    async def behaviour(writer: asyncio.StreamWriter) -> None:
        lines = [f"HTTP/1.1 {status}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return behaviour


def stream(*frames: str) -> Behaviour:
    """A 200 event stream of exactly these frames, then the connection closes."""
    return respond("200 OK", {"Content-Type": "text/event-stream"}, "".join(frames).encode())


def delta(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}) + "\n\n"


async def stall(writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(60)  # cancelled when the test ends


OOM = b'{"error": {"message": "CUDA out of memory"}}'
SERVER_ERROR = respond(
    "500 Internal Server Error", {"Content-Type": "application/json", "Content-Length": str(len(OOM))}, OOM
)


@contextmanager
def cairn(tmp_path: Path, settings: Settings, generator: Generator) -> Iterator[tuple[str, Container]]:
    """Cairn on a free port, on fake storage, answering with `generator`; a seeded brain 'notes'."""
    container = build_container(settings, replace(fake_adapters(), generator=generator))
    brain = container.brains.create("Notes", slug="notes")
    container.documents.write(brain, "memory/global/run.md", b"I finished the 10k route in under 55 minutes.")
    container.documents.write(brain, "memory/global/tea.md", b"Green tea is best steeped at 80 degrees.")
    with ServerThread(container) as st:
        yield f"http://127.0.0.1:{st.port}", container


def settings_for(tmp_path: Path, model: FakeModel, timeout_s: float = 5.0) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        generator="openai",
        generator_base_url=model.base_url,
        generator_model="fake-model",
        generator_api_key=SECRET,  # type: ignore[arg-type]
        generator_timeout_s=timeout_s,
    )


def fast_generator(settings: Settings) -> OpenAICompatGenerator:
    """What generator_for builds, with quick retries (Settings has no knob for them)."""
    return OpenAICompatGenerator(
        settings.generator_base_url,
        "fake-model",
        api_key=SECRET,
        timeout_s=5.0,
        max_retries=2,
        backoff_s=0.01,
    )


def state(container: Container) -> dict[str, Any]:
    """Everything memory_ask could have written, and what a search finds."""
    records, blobs, chunks = container.adapters.records, container.adapters.blobs, container.adapters.chunks
    assert isinstance(records, MemoryRecordStore) and isinstance(blobs, MemoryBlobStore)
    assert isinstance(chunks, MemoryChunkIndex)
    brain = container.brains.resolve("notes")
    hits = container.search.chunks_for(QUESTION, ChunkFilter(brain_ids=(brain.id,)), 5)
    return {
        "records": dict(records.rows),
        "blobs": dict(blobs.items),
        "chunks": sorted(chunks.items),
        "paths": sorted(
            f.path for f in container.documents.list(brain, "", recursive=True, include_generated=True)
        ),
        "hits": [(h.chunk.id, h.score) for h in hits],
        "sessions": sorted(pk for pk, _ in records.rows if pk.startswith("session#")),
    }


async def ask_both_ways(base: str) -> tuple[list[tuple[str, dict[str, Any]]], Any, str]:
    """The REST ask stream's events, and the MCP tool result with the progress text before it."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        response = await http.post("/v1/brains/notes/ask", json={"query": QUESTION})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)

    async with Client(f"{base}/mcp") as client:
        result = await client.call_tool(
            "memory_ask", {"query": QUESTION, "brain": "notes"}, progress_callback=on_progress
        )
    return sse_events(response.text), result, "".join(m or "" for m in messages)


def assert_error_shapes(
    events: list[tuple[str, dict[str, Any]]], result: Any, code: str, retryable: bool
) -> dict[str, Any]:
    kinds = [k for k, _ in events]
    # REST: retrieve first, an error event last, never a done
    assert kinds[0] == "retrieve" and kinds[-1] == "error" and "done" not in kinds
    assert set(kinds[1:-1]) <= {"answer_delta"}
    error = events[-1][1]
    assert set(error) == {"code", "message", "retryable"}
    assert (error["code"], error["retryable"]) == (code, retryable) and error["message"]
    # MCP: a text-only error result carrying the same {code, message, retryable}
    assert result.is_error and result.structured_content is None
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(result.content[0].text) == error
    assert SECRET not in result.content[0].text and SECRET not in json.dumps(events)
    return error


async def test_a_stalled_model_is_a_retryable_timeout(tmp_path: Path) -> None:
    async with serving(FakeModel(stall)) as model:
        # Given the generator chosen from Settings alone, with a short timeout
        settings = settings_for(tmp_path, model, timeout_s=0.3)
        generator = generator_for(settings)
        assert (
            isinstance(generator, OpenAICompatGenerator)
            and generator.url == f"{model.base_url}/chat/completions"
        )
        with cairn(tmp_path, settings, generator) as (base, container):
            before = state(container)
            events, result, progress = await ask_both_ways(base)
            after = state(container)
    error = assert_error_shapes(events, result, "generation_timeout", True)
    assert "timed out" in error["message"] and progress == ""
    assert len(model.requests) == 2  # one per surface: a read timeout is not retried
    assert after == before and before["hits"] and before["sessions"] == []


async def test_server_errors_until_retries_run_out(tmp_path: Path) -> None:
    async with serving(FakeModel(SERVER_ERROR)) as model:
        settings = settings_for(tmp_path, model)
        with cairn(tmp_path, settings, fast_generator(settings)) as (base, container):
            before = state(container)
            events, result, progress = await ask_both_ways(base)
            after = state(container)
    error = assert_error_shapes(events, result, "generation_failed", True)
    assert "HTTP 500" in error["message"] and "CUDA out of memory" in error["message"]
    assert events[1:-1] == [] and progress == ""  # no text was streamed before the error
    assert len(model.requests) == 2 * 3  # each surface: the first try and two retries
    assert b"authorization: bearer " + SECRET.encode() in model.requests[0].lower()
    assert after == before


@pytest.mark.parametrize(
    ("behaviour", "retryable", "partial"),
    [
        # not SSE at all: no data lines, so the stream ends without completing
        (stream("<html>502 Bad Gateway</html>\n"), True, ""),
        # some deltas, then the connection closes without finish_reason or [DONE]
        (stream(delta("You finished"), delta(" in under")), True, "You finished in under"),
        # a chunk that is not JSON
        (stream(delta("You finished"), "data: {not json\n\n", "data: [DONE]\n\n"), False, "You finished"),
    ],
    ids=["garbage", "no-done", "invalid-json"],
)
async def test_a_malformed_stream_is_a_bad_response(
    tmp_path: Path, behaviour: Behaviour, retryable: bool, partial: str
) -> None:
    async with serving(FakeModel(behaviour)) as model:
        settings = settings_for(tmp_path, model)
        with cairn(tmp_path, settings, fast_generator(settings)) as (base, container):
            before = state(container)
            events, result, progress = await ask_both_ways(base)
            after = state(container)
    assert_error_shapes(events, result, "bad_response", retryable)
    # the deltas streamed before the failure reached the REST caller, but no answer was completed
    assert "".join(d["delta"] for k, d in events if k == "answer_delta") == partial
    assert progress == partial  # MCP: progress stopped where the stream broke
    assert after == before
