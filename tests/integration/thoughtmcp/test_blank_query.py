"""A query of whitespace only is refused as ThoughtMCP 0.6.0 refuses it: recall embeds its text, and
the embedding model takes no blank text; search's full-text parser takes no blank query. Each is a
`success: false` envelope with ThoughtMCP's error, after recall's filters are checked (ThoughtMCP
checks them first). An empty text is no text: recall ranks by salience and search lists memories."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, refused, thought

pytestmark = pytest.mark.anyio
BLANKS = ["   ", "\t\n ", "\u3000"]


async def _remember(t: Client) -> None:
    await t.call_tool(
        "remember",
        {
            "content": "Erin prefers dark mode in every editor",
            "userId": "erin",
            "sessionId": "s1",
            "primarySector": "semantic",
        },
    )


@pytest.mark.parametrize("blank", BLANKS)
async def test_a_blank_query_is_refused_by_recall_and_search(live: LiveServer, blank: str) -> None:
    async with thought(live) as t:
        await _remember(t)
        recall = refused(await t.call_tool("recall", {"userId": "erin", "text": blank}))
        search = refused(await t.call_tool("search", {"userId": "erin", "text": blank}))
        stranger = refused(await t.call_tool("recall", {"userId": "nobody", "text": blank}))
        filters_first = refused(
            await t.call_tool("recall", {"userId": "erin", "text": blank, "minSalience": 2})
        )
    assert (
        recall["error"]
        == stranger["error"]
        == "Memory search failed: Text cannot be empty or whitespace only"
    )
    assert search["error"] == "Full-text search failed: Query cannot be empty"
    assert recall["suggestion"] and search["suggestion"]
    assert filters_first["error"] == "minSalience must be between 0 and 1"


async def test_an_empty_query_is_no_query(live: LiveServer) -> None:
    async with thought(live) as t:
        await _remember(t)
        recall = data(await t.call_tool("recall", {"userId": "erin", "text": ""}))
        search = data(await t.call_tool("search", {"userId": "erin", "text": ""}))
    assert recall["rankingMethod"] == "salience" and len(recall["memories"]) == 1
    assert search["searchType"] == "vector-metadata" and len(search["memories"]) == 1
