"""batch_recall given an ID more than once answers each memory once, at the first place it was
asked for, as ThoughtMCP's `id = ANY(ids)` select does; notFound keeps every ID asked for that
nothing answered, repeats included (the original filters the list it was given)."""

from __future__ import annotations

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, thought

pytestmark = pytest.mark.anyio


async def test_a_repeated_id_answers_its_memory_once(live: LiveServer) -> None:
    async with thought(live) as t:
        made = data(
            await t.call_tool(
                "batch_remember",
                {
                    "userId": "dana",
                    "sessionId": "s1",
                    "memories": [
                        {"content": "Dana reviews pull requests daily", "primarySector": "procedural"},
                        {"content": "Dana prefers dark mode in editors", "primarySector": "semantic"},
                    ],
                },
            )
        )
        first, second = (c["memoryId"] for c in made["created"])
        asked = [second, first, second, "mem_none", first, "mem_none"]
        answer = data(await t.call_tool("batch_recall", {"userId": "dana", "memoryIds": asked}))
    assert [m["id"] for m in answer["memories"]] == [second, first]
    assert answer["foundCount"] == len(answer["memories"])
    assert answer["notFound"] == ["mem_none", "mem_none"]
