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


async def test_an_id_no_memory_could_have_is_not_found_and_the_others_are_answered(live: LiveServer) -> None:
    """An ID too long to be any row's key (over a store key's 1024 bytes), or another user's memory,
    answers nothing, as an ID ThoughtMCP's select matches no row with: it is not found, never a
    refusal of the whole call."""
    async with thought(live) as t:
        mine = data(
            await t.call_tool(
                "remember",
                {
                    "content": "Dana drinks tea",
                    "userId": "dana",
                    "sessionId": "s1",
                    "primarySector": "semantic",
                },
            )
        )["memoryId"]
        theirs = data(
            await t.call_tool(
                "remember",
                {
                    "content": "Finn drinks coffee",
                    "userId": "finn",
                    "sessionId": "s1",
                    "primarySector": "semantic",
                },
            )
        )["memoryId"]
        asked = ["m" * 2000, mine, "é" * 600, theirs]
        answer = data(await t.call_tool("batch_recall", {"userId": "dana", "memoryIds": asked}))
    assert [m["id"] for m in answer["memories"]] == [mine]
    assert answer["notFound"] == [asked[0], asked[2], theirs]
