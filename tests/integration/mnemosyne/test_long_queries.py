"""A long query: a token over a link node's 512 bytes is searched like any other (the graph leg finds
nothing for it), a query over 8,192 characters is refused before any leg runs, and the graph leg
reads at most MAX_QUERY_CONCEPTS link partitions per library whatever the query's length, still
finding the names in it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from cairn.services.links.repository import LinkRepository
from cairn.services.mnemosyne.concepts import MAX_QUERY_CONCEPTS
from tests.integration.mcp.conftest import LiveServer
from tests.integration.mnemosyne.conftest import body, failure, mnemosyne, stock

pytestmark = pytest.mark.anyio
FILLER = "walked along rivers beside quiet meadows while morning clouds drifted slowly over hills "


@contextmanager
def counted_reads(live: LiveServer) -> Iterator[list[str]]:
    """The link partitions the concept graph reads meanwhile (a target each)."""
    links: LinkRepository = live.container.concepts.links
    reads: list[str] = []
    incoming = links.incoming_metadata

    def counting(brain_id: str, target: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(target)
        return incoming(brain_id, target, *args, **kwargs)

    links.incoming_metadata = counting  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        del links.incoming_metadata


async def test_a_token_over_512_bytes_is_searched_and_the_graph_leg_finds_nothing_for_it(
    live: LiveServer,
) -> None:
    stock(live.container)
    url = "https://example.com/" + "a1b2c3d4" * 70 + " Netherfield Park"
    async with mnemosyne(live) as m:
        token = body(await m.call_tool("search", {"query": "x" * 520}))
        graph = body(await m.call_tool("search", {"query": "é" * 300, "search_types": ["graph"]}))
        mixed = body(await m.call_tool("search", {"query": url, "search_types": ["graph"]}))

    assert token["query"] == "x" * 520 and token["search_types_used"] == ["vector", "fulltext", "graph"]
    assert graph["candidates"] == []
    assert mixed["candidates"] and all("Netherfield Park" in c["text_preview"] for c in mixed["candidates"])


async def test_a_query_over_8192_characters_is_refused_before_any_leg_runs(live: LiveServer) -> None:
    stock(live.container)
    query = (FILLER * 200)[:8193]
    with counted_reads(live) as reads:
        async with mnemosyne(live) as m:
            refused = failure(await m.call_tool("search", {"query": query}))
            graph_only = {"query": query[:8192], "search_types": ["graph"]}
            at_the_bound = body(await m.call_tool("search", graph_only))

    assert refused == "query must be at most 8192 characters (it has 8193)"
    assert at_the_bound["query"] == query[:8192]
    assert 0 < len(reads) <= MAX_QUERY_CONCEPTS * 2  # two libraries: only the second call read


async def test_the_graph_leg_reads_a_bounded_number_of_concepts_and_keeps_the_names(live: LiveServer) -> None:
    stock(live.container)
    words = FILLER.split()
    query = " ".join(f"{w}{i}" for i in range(100) for w in words)[:7000] + " Netherfield Park"
    with counted_reads(live) as reads:
        async with mnemosyne(live) as m:
            found = body(await m.call_tool("search", {"query": query, "search_types": ["graph"]}))

    assert len(reads) <= MAX_QUERY_CONCEPTS * 2  # one partition per concept per library
    assert len(set(reads)) <= MAX_QUERY_CONCEPTS
    assert "concept:netherfield park" in reads
    assert found["candidates"] and all("Netherfield Park" in c["text_preview"] for c in found["candidates"])


async def test_a_name_edited_out_by_another_surface_no_longer_leads_the_graph_leg_to_it(
    live: LiveServer,
) -> None:
    shelf = stock(live.container)
    brain = shelf.novels.brain
    plain = "Pemberley stood in a wide park; the house was large and handsome.\n"
    path = next(d.path for d in live.container.documents.documents(brain, "") if "chapter-1" in d.path)
    async with mnemosyne(live) as m:
        before = body(await m.call_tool("search", {"query": "Netherfield Park", "search_types": ["graph"]}))
    live.container.documents.write(brain, path, plain.encode())  # another surface's write, no ingest
    async with mnemosyne(live) as m:
        gone = body(await m.call_tool("search", {"query": "Netherfield Park", "search_types": ["graph"]}))
        kept = body(await m.call_tool("search", {"query": "Pemberley", "search_types": ["fulltext"]}))

    assert any("Netherfield" in c["text_preview"] for c in before["candidates"])
    assert all("Netherfield" in c["text_preview"] for c in gone["candidates"]), gone["candidates"]
    assert any("Pemberley stood" in c["text_preview"] for c in kept["candidates"])
