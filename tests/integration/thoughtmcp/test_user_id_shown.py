"""A userId a memory is stored under is shown as a name (the web UI, an erasure's subject): remember
and batch_remember refuse one with control or bidirectional characters in ThoughtMCP's envelope,
before anything is made, even the first write's brain. Reads take any userId."""

from __future__ import annotations

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, refused, thought

pytestmark = pytest.mark.anyio
REFUSAL = {
    "success": False,
    "error": "userId must not contain control or bidirectional characters",
    "suggestion": "Use a userId of printable characters",
}


@pytest.mark.parametrize("user", ["alice\u202egnp.exe", "bob\nroot", "carol\x00", "dave\u2066x\u2069"])
async def test_a_user_id_with_control_or_bidi_characters_stores_nothing(live: LiveServer, user: str) -> None:
    before = live.snapshot()
    async with thought(live) as client:
        one = {
            "content": "The boiler was serviced on Monday.",
            "userId": user,
            "sessionId": "s1",
            "primarySector": "episodic",
        }
        assert refused(await client.call_tool("remember", one)) == REFUSAL
        many = {
            "userId": user,
            "sessionId": "s1",
            "memories": [{"content": "The roof leaks when it rains.", "primarySector": "episodic"}],
        }
        assert refused(await client.call_tool("batch_remember", many)) == REFUSAL
        reading = data(await client.call_tool("recall", {"userId": user, "query": "boiler"}))
    assert reading["memories"] == []
    assert live.snapshot() == before


async def test_a_printable_user_id_with_accents_and_spaces_is_stored(live: LiveServer) -> None:
    async with thought(live) as client:
        user = "Zoë Ó Briain (ops)"
        args = {
            "content": "The boiler was serviced on Monday.",
            "userId": user,
            "sessionId": "s1",
            "primarySector": "episodic",
        }
        stored = data(await client.call_tool("remember", args))
        found = data(await client.call_tool("recall", {"userId": user, "query": "boiler serviced"}))
    assert [m["id"] for m in found["memories"]] == [stored["memoryId"]]
