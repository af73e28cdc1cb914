"""A query of any length on the surfaces whose tools set no bound (zengram, gbrain, ThoughtMCP):
each search reads its first QUERY_CHARS characters, so the embedder and the keyword leg never see
more, and what the head of the query names is still found first. Before, a 29 MB query cost a
search 93 s and 5.8 GB. (Mnemosyne refuses a query over 8,192 characters and bounds the concepts
its graph leg reads: tests/integration/mnemosyne/test_long_queries.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.text import QUERY_CHARS, query_read
from cairn.ports.chunks import ChunkHit, ChunkQuery
from cairn.ports.embedder import Vectors
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.container import fake_adapters
from tests.fakes.embedder import HashingEmbedder
from tests.integration.mcp.conftest import LiveServer, serving

pytestmark = pytest.mark.anyio

FILLER = " ".join(f"filler{i} word{i % 97}" for i in range(40_000))  # ~590,000 characters


class Widest:
    """The longest text embedded and searched by words since the last reset."""

    def __init__(self) -> None:
        self.embedded = 0
        self.searched = 0

    def reset(self) -> None:
        self.embedded = self.searched = 0


class MeasuredEmbedder(HashingEmbedder):
    def __init__(self, widest: Widest, dimension: int) -> None:
        super().__init__(dimension)
        self.widest = widest

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.widest.embedded = max([self.widest.embedded, *(len(t) for t in texts)])
        return super().embed(texts)


class MeasuredChunks(MemoryChunkIndex):
    def __init__(self, widest: Widest, dimension: int) -> None:
        super().__init__(dimension)
        self.widest = widest

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        self.widest.searched = max(self.widest.searched, len(query.text))
        return super().search(query)


@pytest.fixture
def widest() -> Widest:
    return Widest()


@pytest.fixture
def live(tmp_path: Path, widest: Widest) -> Iterator[LiveServer]:
    adapters = fake_adapters()
    adapters.embedder = MeasuredEmbedder(widest, adapters.embedder.dimension)
    adapters.chunks = MeasuredChunks(widest, adapters.embedder.dimension)
    settings = Settings(data_dir=tmp_path / "data")  # type: ignore[call-arg]
    root = tmp_path / "ingest-root"
    root.mkdir()
    yield from serving(build_container(settings, adapters), root, tmp_path / "data")


def _json(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    return json.loads(block.text)


def test_a_long_query_is_read_up_to_its_last_whole_word_within_the_bound() -> None:
    words = "alpha " * 2000
    assert query_read(words) == ("alpha " * 681 + "alpha")  # 4,091 characters: no word cut in half
    assert query_read("x" * 5000) == "x" * QUERY_CHARS  # no space: cut at the bound
    assert query_read("short query") == "short query"
    assert query_read("y" * QUERY_CHARS + " tail") == "y" * QUERY_CHARS


async def test_zengram_reads_the_head_of_a_long_query(live: LiveServer, widest: Widest) -> None:
    question = "Where does the kettle descale?"
    async with Client(f"{live.base}/mcp/zengram") as z:
        for fact in ("The kettle descales on Fridays.", "Invoices are sent monthly."):
            _json(await z.call_tool("brain_store", {"type": "fact", "content": fact}))
        widest.reset()
        found = _json(await z.call_tool("brain_search", {"query": f"{question} {FILLER}", "format": "full"}))
        searched = (widest.embedded, widest.searched)
        widest.reset()
        reflected = _json(await z.call_tool("brain_reflect", {"topic": f"{question} {FILLER}"}))

    assert found["results"][0]["text"] == "The kettle descales on Fridays."
    assert reflected["topic"] == f"{question} {FILLER}"  # said back as asked
    for embedded, keywords in (searched, (widest.embedded, widest.searched)):
        assert 0 < embedded <= QUERY_CHARS and 0 < keywords <= QUERY_CHARS


async def test_gbrain_reads_the_head_of_a_long_query(live: LiveServer, widest: Widest) -> None:
    page = "---\ntitle: Kettle\ntype: concept\n---\n\nThe kettle descales on Fridays.\n"
    async with Client(f"{live.base}/mcp/gbrain") as g:
        assert not (await g.call_tool("brain_put", {"slug": "concepts/kettle", "content": page})).is_error
        widest.reset()
        searched = _json(await g.call_tool("brain_search", {"query": f"kettle descales {FILLER}"}))
        queried = _json(await g.call_tool("brain_query", {"query": f"kettle descales {FILLER}"}))

    assert searched[0]["slug"] == queried[0]["slug"] == "default::concepts/kettle"
    assert 0 < widest.embedded <= QUERY_CHARS and 0 < widest.searched <= QUERY_CHARS


async def test_thoughtmcp_recall_reads_the_head_of_a_long_text(live: LiveServer, widest: Widest) -> None:
    memory = {"content": "Ada prefers dark mode in every editor", "userId": "ada", "sessionId": "s1"}
    async with Client(f"{live.base}/mcp/thoughtmcp") as t:
        assert not (await t.call_tool("remember", {**memory, "primarySector": "semantic"})).is_error
        widest.reset()
        recalled = _json(await t.call_tool("recall", {"userId": "ada", "text": f"dark mode editor {FILLER}"}))

    assert recalled["data"]["memories"][0]["content"] == memory["content"]
    assert 0 < widest.embedded <= QUERY_CHARS and widest.searched <= QUERY_CHARS  # vectors only
