"""memory_create_brain and memory_list_brains over real HTTP."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, error, ok, text

pytestmark = pytest.mark.anyio

BRAIN_KEYS = {
    "id",
    "slug",
    "name",
    "visibility",
    "embedding_model",
    "embedding_dim",
    "metadata",
    "created_at",
    "updated_at",
}


async def test_create_then_list(live: LiveServer) -> None:
    async with Client(live.url) as client:
        empty = await client.call_tool("memory_list_brains", {})
        made = await client.call_tool("memory_create_brain", {"name": "Work Notes"})
        public = ok(
            await client.call_tool(
                "memory_create_brain", {"name": "Shared", "slug": "team-1", "visibility": "public"}
            )
        )
        listed = await client.call_tool("memory_list_brains", {})
    assert ok(empty) == {"items": []} and text(empty).startswith("0 brain")
    work = ok(made)
    assert set(work) == BRAIN_KEYS
    assert work["id"].startswith("brn_") and work["slug"] == "work-notes"
    assert work["name"] == "Work Notes" and work["visibility"] == "private"
    assert work["slug"] in text(made) and work["id"] in text(made)
    assert public["slug"] == "team-1" and public["visibility"] == "public"
    assert ok(listed) == {"items": [work, public]}
    assert "work-notes" in text(listed) and "team-1" in text(listed)


async def test_a_generated_slug_never_collides(live: LiveServer) -> None:
    async with Client(live.url) as client:
        a = ok(await client.call_tool("memory_create_brain", {"name": "Ideas"}))
        b = ok(await client.call_tool("memory_create_brain", {"name": "Ideas"}))
    assert a["slug"] == "ideas" and b["slug"] != "ideas" and b["slug"].startswith("ideas")


async def test_a_duplicate_slug_is_a_conflict_and_creates_nothing(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "One", "slug": "same"}))
        err = error(await client.call_tool("memory_create_brain", {"name": "Two", "slug": "same"}))
        items = ok(await client.call_tool("memory_list_brains", {}))["items"]
    assert err["code"] == "conflict" and "same" in err["message"]
    assert [b["name"] for b in items] == ["One"]
