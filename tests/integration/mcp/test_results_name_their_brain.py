"""Every search result on every surface names the brain it came from (issue 31, "a first hour
without surprises"), in that surface's style:

- canonical memory_search and memory_recall hits (and session-recall chunks): `brain` (the slug),
  beside `brain_id`; memory_ask citations and retrieved passages: `brain`;
- REST POST /v1/brains/{id}/search hits: `brain`, beside `brain_id`;
- zengram brain_search rows, every format: `brain`;
- gbrain brain_search and brain_query results: `collection` (the collection's gbrain name);
- Mnemosyne search candidates and images: `library_uid` and `library_name`;
- ThoughtMCP recall and search memories: `brain`.

One test per surface, then one where two brains hold nearly the same text and every surface's
results from each name the right one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from cairn.domain.models import Brain
from tests.integration.mcp.conftest import LiveServer, start_server

pytestmark = pytest.mark.anyio
TOKEN = "brain-names-token"
# gbrain names the oldest brain its `default` collection (docs/GBRAIN.md), every other by its slug
COLLECTION = {"alpha": "default", "beta": "beta"}
ALPHA = "The Lisbon offsite is booked for March at the riverside hotel near the tram stop."
BETA = "The Lisbon offsite moved to April at the harbour hotel near the ferry pier."


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    """zengram reads brain `alpha`, ThoughtMCP `beta`; both brains exist before any call."""
    yield from start_server(
        tmp_path, token=TOKEN, rate_limit_per_s=0, zengram_brain="alpha", thoughtmcp_brain="beta"
    )


@pytest.fixture
def brains(live: LiveServer) -> dict[str, Brain]:
    c = live.container
    return {slug: c.brains.create(f"Team {slug}", slug=slug) for slug in ("alpha", "beta")}


def client(live: LiveServer, path: str) -> Client:
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=60)
    return Client(streamable_http_client(f"{live.base}{path}", http_client=http))


def text_json(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    return json.loads(block.text)


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


# -- writing the same kind of text into each brain, through each surface -----------------------------


def write_notes(live: LiveServer, brains: dict[str, Brain]) -> None:
    for slug, body in (("alpha", ALPHA), ("beta", BETA)):
        live.container.documents.write(brains[slug], "memory/global/offsite.md", body.encode())


async def put_pages(live: LiveServer) -> None:
    async with client(live, "/mcp/gbrain") as g:
        for slug, body in (("alpha", ALPHA), ("beta", BETA)):
            page = f"---\ntitle: Offsite\ntype: project\n---\n# Offsite\n\n{body}\n"
            await g.call_tool("brain_put", {"slug": f"{slug}::projects/offsite", "content": page})


def stock_libraries(live: LiveServer, brains: dict[str, Brain]) -> None:
    c = live.container
    for slug, body in (("alpha", ALPHA), ("beta", BETA)):
        c.libraries.describe(brains[slug].id, library_type="business")
        c.ingest.ingest_bytes(
            brains[slug], f"# Offsite\n\n{body}\n".encode(), name="offsite.md", path="notes/offsite.md"
        )


async def store_zengram(live: LiveServer) -> None:
    async with client(live, "/mcp/zengram") as z:
        result = await z.call_tool("brain_store", {"type": "fact", "content": ALPHA, "key": "offsite"})
        assert not result.is_error, result.content


async def remember_thought(live: LiveServer) -> None:
    async with client(live, "/mcp/thoughtmcp") as t:
        result = await t.call_tool(
            "remember", {"userId": "u1", "sessionId": "s1", "content": BETA, "primarySector": "semantic"}
        )
        assert text_json(result)["success"] is True


# -- one surface at a time ------------------------------------------------------------------------


async def test_canonical_hits_citations_and_passages_name_their_brain(
    live: LiveServer, brains: dict[str, Brain]
) -> None:
    write_notes(live, brains)
    async with client(live, "/mcp") as m:
        for slug in ("alpha", "beta"):
            for tool in ("memory_search", "memory_recall"):
                found = ok(await m.call_tool(tool, {"query": "Lisbon offsite hotel", "brain": slug}))
                assert found["hits"], tool
                assert {(h["brain"], h["brain_id"]) for h in found["hits"]} == {(slug, brains[slug].id)}
            asked = ok(await m.call_tool("memory_ask", {"query": "Lisbon offsite hotel", "brain": slug}))
            assert asked["citations"] and asked["retrieved"]
            assert {c["brain"] for c in asked["citations"]} == {slug}
            assert {r["brain"] for r in asked["retrieved"]} == {slug}


async def test_canonical_session_recall_names_its_brain(live: LiveServer, brains: dict[str, Brain]) -> None:
    write_notes(live, brains)
    session = live.container.sessions.create(brains["beta"])
    async with client(live, "/mcp") as m:
        found = ok(
            await m.call_tool(
                "memory_recall", {"query": "Lisbon offsite", "brain": "beta", "session_id": session.id}
            )
        )
    assert found["chunks"] and {h["brain"] for h in found["chunks"]} == {"beta"}


async def test_rest_search_hits_name_their_brain(live: LiveServer, brains: dict[str, Brain]) -> None:
    write_notes(live, brains)
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=live.base, headers=headers) as http:
        for slug in ("alpha", "beta"):
            response = await http.post(f"/v1/brains/{slug}/search", json={"query": "Lisbon offsite"})
            assert response.status_code == 200, response.text
            hits = response.json()["hits"]
            assert hits and {(h["brain"], h["brain_id"]) for h in hits} == {(slug, brains[slug].id)}


async def test_zengram_search_rows_name_their_brain_in_every_format(
    live: LiveServer, brains: dict[str, Brain]
) -> None:
    await store_zengram(live)
    async with client(live, "/mcp/zengram") as z:
        for fmt in ("compact", "index", "full"):
            rows = text_json(await z.call_tool("brain_search", {"query": "Lisbon offsite", "format": fmt}))
            assert rows["results"], fmt
            assert {r["brain"] for r in rows["results"]} == {"alpha"}, fmt


async def test_gbrain_search_and_query_results_name_their_collection(
    live: LiveServer, brains: dict[str, Brain]
) -> None:
    await put_pages(live)
    async with client(live, "/mcp/gbrain") as g:
        for slug in ("alpha", "beta"):
            for tool in ("brain_search", "brain_query"):
                found = text_json(await g.call_tool(tool, {"query": "Lisbon offsite", "collection": slug}))
                assert found, tool
                assert {r["collection"] for r in found} == {COLLECTION[slug]}, tool
                assert all(r["slug"].startswith(f"{COLLECTION[slug]}::") for r in found), tool


async def test_mnemosyne_candidates_name_their_library(live: LiveServer, brains: dict[str, Brain]) -> None:
    stock_libraries(live, brains)
    async with client(live, "/mcp/mnemosyne/") as mn:
        found = ok(
            await mn.call_tool("search", {"query": "Lisbon offsite", "library_uid": brains["alpha"].id})
        )
    assert found["candidates"]
    assert {(c["library_uid"], c["library_name"]) for c in found["candidates"]} == {
        (brains["alpha"].id, "Team alpha")
    }


async def test_thoughtmcp_recall_and_search_name_their_brain(
    live: LiveServer, brains: dict[str, Brain]
) -> None:
    await remember_thought(live)
    async with client(live, "/mcp/thoughtmcp") as t:
        for tool, args in (
            ("recall", {"userId": "u1"}),
            ("search", {"userId": "u1", "text": "Lisbon"}),
            ("search", {"userId": "u1"}),
        ):
            reply = text_json(await t.call_tool(tool, args))
            assert reply["success"] is True and reply["data"]["memories"], (tool, args)
            assert {m["brain"] for m in reply["data"]["memories"]} == {"beta"}, (tool, args)


# -- two brains, similar text, every surface ----------------------------------------------------


async def test_results_from_two_brains_with_similar_text_each_name_the_right_one(
    live: LiveServer, brains: dict[str, Brain]
) -> None:
    # Given nearly the same text in both brains, written through every surface
    write_notes(live, brains)
    await put_pages(live)
    stock_libraries(live, brains)
    await store_zengram(live)  # zengram reads alpha
    await remember_thought(live)  # ThoughtMCP reads beta
    texts = {"alpha": ALPHA, "beta": BETA}
    query = "Lisbon offsite hotel"

    def right(brain: str, text: str) -> bool:
        """A result's text is the one its named brain holds."""
        return texts[brain].split(" at ")[0] in text

    # Then each result names the brain whose text it carries
    async with client(live, "/mcp") as m:
        for slug in texts:
            hits = ok(await m.call_tool("memory_search", {"query": query, "brain": slug}))["hits"]
            assert hits and all(h["brain"] == slug and right(slug, h["content"]) for h in hits)
    async with client(live, "/mcp/gbrain") as g:
        for slug in texts:
            pages = text_json(await g.call_tool("brain_query", {"query": query, "collection": slug}))
            assert pages and all(
                p["collection"] == COLLECTION[slug] and right(slug, p["summary"]) for p in pages
            )
    async with client(live, "/mcp/mnemosyne/") as mn:
        both = ok(await mn.call_tool("search", {"query": query, "rerank": False}))["candidates"]
    by_name = {b.name: slug for slug, b in brains.items()}
    assert {c["library_name"] for c in both} == {"Team alpha", "Team beta"}
    assert all(right(by_name[c["library_name"]], c["text_preview"]) for c in both)
    assert all(c["library_uid"] == brains[by_name[c["library_name"]]].id for c in both)
    async with client(live, "/mcp/zengram") as z:
        rows = text_json(await z.call_tool("brain_search", {"query": query}))["results"]
    assert rows and all(r["brain"] == "alpha" and right("alpha", r["content"]) for r in rows)
    async with client(live, "/mcp/thoughtmcp") as t:
        memories = text_json(await t.call_tool("search", {"userId": "u1", "text": "Lisbon"}))["data"][
            "memories"
        ]
    assert memories and all(mem["brain"] == "beta" and right("beta", mem["content"]) for mem in memories)
