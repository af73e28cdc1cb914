"""A plain search on any surface finds what is true now: a typed memory superseded by a later
value of its key (stored through zengram) is history, found only where history is asked for
(zengram's include_superseded and at_time), never by memory_search, memory_ask, REST search or
Mnemosyne's search."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest
from mcp import Client

from cairn.domain.models import MemoryType
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery
from cairn.services.mnemosyne.library_search import SearchRequest
from tests.integration.mcp.conftest import LiveServer, ok

pytestmark = pytest.mark.anyio
VALUES = {2024: "MySQL", 2025: "PostgreSQL", 2026: "CockroachDB"}


def seed(live: LiveServer, order: tuple[int, ...]) -> None:
    c = live.container
    brain = c.brains.create("Team", slug="team")
    for year in order:
        fact = MemoryInput(
            type=MemoryType.fact,
            key="acme-database",
            content=f"The Acme database is {VALUES[year]}.",
            source_agent="scout",
            valid_from=datetime(year, 1, 1, tzinfo=UTC),
        )
        c.memories.store(brain, fact)
    c.documents.write(brain, "notes/acme.md", b"# Acme\n\nAcme runs its billing on the Harbour cluster.")


@pytest.mark.parametrize("order", [(2024, 2025, 2026), (2026, 2024, 2025)], ids=["in-order", "out-of-order"])
async def test_no_plain_search_returns_a_superseded_value(live: LiveServer, order: tuple[int, ...]) -> None:
    seed(live, order)
    c = live.container
    query = "What database does Acme use?"
    async with Client(live.url) as client:
        canonical = json.dumps(ok(await client.call_tool("memory_search", {"query": query, "brain": "team"})))
        answer = json.dumps(ok(await client.call_tool("memory_ask", {"query": query, "brain": "team"})))
    rest = httpx.post(f"{live.base}/v1/brains/team/search", json={"query": query}, timeout=30).text
    library = next(lib for lib in c.libraries.libraries() if lib.brain.slug == "team")
    found = c.library_search.search(SearchRequest(query, [library], rerank=False))
    mnemosyne = json.dumps([i.chunk.text for i in found.candidates])

    for surface, text in {
        "canonical": canonical,
        "ask": answer,
        "rest": rest,
        "mnemosyne": mnemosyne,
    }.items():
        assert "CockroachDB" in text, surface
        assert "MySQL" not in text and "PostgreSQL" not in text, surface
    history = c.memories.search(c.brains.get("team"), query, MemoryQuery(include_superseded=True))
    assert {v for v in VALUES.values() if any(v in h.text for h in history)} == set(VALUES.values())
