"""remember, recall, search, update_memory, forget and the batch tools through the official MCP
client over HTTP, with ThoughtMCP's envelope and messages."""

from __future__ import annotations

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, refused, thought

pytestmark = pytest.mark.anyio
ALICE = "alice"


async def test_remember_recall_search_update_forget(live: LiveServer) -> None:
    async with thought(live) as t:
        first = data(
            await t.call_tool(
                "remember",
                {
                    "content": "User prefers dark mode for all applications",
                    "userId": ALICE,
                    "sessionId": "s1",
                    "primarySector": "semantic",
                    "metadata": {
                        "keywords": ["dark mode", "preference"],
                        "tags": ["settings"],
                        "importance": 0.8,
                    },
                },
            )
        )
        second = data(
            await t.call_tool(
                "remember",
                {
                    "content": "Deployed the billing service to production after the critical fix",
                    "userId": ALICE,
                    "sessionId": "s1",
                    "primarySector": "episodic",
                },
            )
        )
        recalled = data(await t.call_tool("recall", {"userId": ALICE, "text": "dark mode preference"}))
        listed = data(await t.call_tool("recall", {"userId": ALICE, "primarySector": "episodic"}))
        found = data(
            await t.call_tool("search", {"userId": ALICE, "text": "billing AND production NOT staging"})
        )
        none = data(await t.call_tool("search", {"userId": ALICE, "text": "billing AND staging"}))
        bad = refused(await t.call_tool("search", {"userId": ALICE, "text": "(billing AND"}))
        updated = data(
            await t.call_tool(
                "update_memory",
                {
                    "memoryId": first["memoryId"],
                    "userId": ALICE,
                    "content": "User strongly prefers dark mode",
                },
            )
        )
        soft = data(
            await t.call_tool("forget", {"memoryId": second["memoryId"], "userId": ALICE, "soft": True})
        )
        after_soft = data(await t.call_tool("recall", {"userId": ALICE}))
        with_deleted = data(await t.call_tool("recall", {"userId": ALICE, "minStrength": 0}))
        hard = data(await t.call_tool("forget", {"memoryId": first["memoryId"], "userId": ALICE}))
        gone = refused(await t.call_tool("forget", {"memoryId": first["memoryId"], "userId": ALICE}))
        short = refused(
            await t.call_tool(
                "remember",
                {"content": "too short", "userId": ALICE, "sessionId": "s", "primarySector": "semantic"},
            )
        )

    assert first["memoryId"].startswith("mem_") and first["salience"] == pytest.approx((0.5 + 0.8) / 2)
    assert first["strength"] == 1.0 and first["linksCreated"] == 0
    assert first["embeddingsGenerated"] == second["embeddingsGenerated"] == 5  # one per sector
    assert second["salience"] == pytest.approx(0.6)  # "critical"
    top = recalled["memories"][0]
    assert top["id"] == first["memoryId"] and recalled["rankingMethod"] == "similarity"
    assert set(top["scoreComponents"]) == {"total", "similarity", "salience", "recency", "linkWeight"}
    assert recalled["scores"][top["id"]] == top["score"] == top["scoreComponents"]["total"]  # a number
    assert [m["id"] for m in listed["memories"]] == [second["memoryId"]] and listed[
        "rankingMethod"
    ] == "salience"
    assert [m["id"] for m in found["memories"]] == [second["memoryId"]] and found["searchType"] == "full-text"
    hit = found["memories"][0]
    assert "<b>billing</b>" in hit["highlight"] and hit["matchedTerms"] == ["billing", "production"]
    assert none["memories"] == [] and none["totalCount"] == 0
    assert "unbalanced parenthesis" in bad["error"]
    assert updated == {
        "memoryId": first["memoryId"],
        "embeddingsRegenerated": True,
        "connectionsUpdated": 0,
        "strength": 1.0,
        "salience": first["salience"],
    }
    assert soft["deletionType"] == "soft" and soft["message"] == "Memory strength set to 0, data preserved"
    assert second["memoryId"] not in [m["id"] for m in after_soft["memories"]]
    assert second["memoryId"] in [m["id"] for m in with_deleted["memories"]]
    assert hard == {
        "memoryId": first["memoryId"],
        "deletionType": "hard",
        "message": "Memory and all related data removed",
    }
    assert gone["error"] == "Memory not found or does not belong to user"
    assert short["code"] == "CONTENT_TOO_SHORT" and short["details"]["actualLength"] == 9
    assert short["error"] == "Content length 9 is below minimum. Allowed range: 10-100000 characters"


async def test_users_never_see_each_others_memories(live: LiveServer) -> None:
    async with thought(live) as t:
        mine = data(
            await t.call_tool(
                "remember",
                {
                    "content": "Alice's secret launch date is March",
                    "userId": "alice",
                    "sessionId": "s",
                    "primarySector": "episodic",
                },
            )
        )
        theirs = data(await t.call_tool("recall", {"userId": "bob", "text": "secret launch date"}))
        search = data(await t.call_tool("search", {"userId": "bob", "text": "secret"}))
        steal = refused(
            await t.call_tool(
                "update_memory", {"memoryId": mine["memoryId"], "userId": "bob", "strength": 0.1}
            )
        )
        drop = refused(await t.call_tool("forget", {"memoryId": mine["memoryId"], "userId": "bob"}))
        batch = data(await t.call_tool("batch_recall", {"userId": "bob", "memoryIds": [mine["memoryId"]]}))
        still = data(await t.call_tool("recall", {"userId": "alice"}))
    assert theirs["memories"] == [] and search["memories"] == [] and batch["memories"] == []
    assert (
        steal["error"] == "Memory does not belong to user"
        and drop["error"] == "Memory not found or does not belong to user"
    )
    assert [m["id"] for m in still["memories"]] == [mine["memoryId"]] and still["memories"][0][
        "strength"
    ] > 0.99


async def test_unknown_tool_and_missing_parameters(live: LiveServer) -> None:
    from mcp.shared.exceptions import MCPError

    async with thought(live) as t:
        missing = refused(await t.call_tool("remember", {"userId": "u"}))
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await t.call_tool("nope", {})
        names = {tool.name for tool in (await t.list_tools()).tools}
    assert missing["error"].startswith("Missing required parameter: ") and "content" in missing["error"]
    assert {"remember", "recall", "update_memory", "forget", "search", "batch_remember"} <= names


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("recall", {"userId": "u", "text": "hello", "limit": "nan"}),
        ("recall", {"userId": "u", "offset": "-inf"}),
        ("search", {"userId": "u", "text": "hello", "limit": "inf"}),
        ("ponder", {"problem": "should we migrate the database?", "timeout": "nan"}),
        ("breakdown", {"problem": "plan a migration of the database", "maxDepth": "nan"}),
    ],
)
async def test_a_number_that_is_not_finite_is_refused_as_invalid(
    live: LiveServer, tool: str, args: dict[str, object]
) -> None:
    async with thought(live) as t:
        answer = refused(await t.call_tool(tool, args))
    assert answer["error"].startswith("Invalid parameters: ") and "finite" in answer["error"]


async def test_the_batch_tools(live: LiveServer) -> None:
    async with thought(live) as t:
        made = data(
            await t.call_tool(
                "batch_remember",
                {
                    "userId": "dana",
                    "sessionId": "s9",
                    "memories": [
                        {
                            "content": "Dana ships the mobile release on Thursdays",
                            "primarySector": "procedural",
                        },
                        {"content": "short", "primarySector": "semantic"},
                        {"content": "Dana felt proud of the smooth launch", "primarySector": "emotional"},
                    ],
                },
            )
        )
        ids = [c["memoryId"] for c in made["created"]]
        recalled = data(
            await t.call_tool("batch_recall", {"userId": "dana", "memoryIds": [*ids, "mem_none"]})
        )
        soft = data(await t.call_tool("batch_forget", {"memoryIds": ids[:1], "soft": True}))
        hidden = data(await t.call_tool("batch_recall", {"userId": "dana", "memoryIds": ids}))
        shown = data(
            await t.call_tool("batch_recall", {"userId": "dana", "memoryIds": ids, "includeDeleted": True})
        )
        hard = data(await t.call_tool("batch_forget", {"memoryIds": [*ids, "mem_none"]}))
        left = data(await t.call_tool("recall", {"userId": "dana", "minStrength": 0}))
    assert (made["successCount"], made["failureCount"]) == (2, 1)
    assert made["failures"][0]["index"] == 1 and "below minimum" in made["failures"][0]["error"]
    assert [m["id"] for m in recalled["memories"]] == ids and recalled["notFound"] == ["mem_none"]
    assert soft["successCount"] == 1 and soft["deletionType"] == "soft"
    assert [m["id"] for m in hidden["memories"]] == ids[1:] and [m["id"] for m in shown["memories"]] == ids
    assert hard["deleted"] == ids and hard["failures"] == [
        {"memoryId": "mem_none", "error": "Memory not found or does not belong to user"}
    ]
    assert left["memories"] == []


async def test_one_bad_batch_item_fails_alone_and_bad_flags_change_nothing(live: LiveServer) -> None:
    async with thought(live) as t:
        made = data(
            await t.call_tool(
                "batch_remember",
                {
                    "userId": "erin",
                    "sessionId": "s1",
                    "memories": [
                        {
                            "content": "Erin reviews pull requests every morning",
                            "primarySector": "procedural",
                        },
                        {"content": "A memory with a sector that does not exist", "primarySector": "bogus"},
                        "not an object",
                        {"primarySector": "semantic"},
                        {
                            "content": "Erin prefers written design docs over meetings",
                            "primarySector": "semantic",
                        },
                    ],
                },
            )
        )
        kept = made["created"][0]["memoryId"]
        soft_yes = refused(await t.call_tool("forget", {"memoryId": kept, "userId": "erin", "soft": "yes"}))
        flags = [
            refused(
                await t.call_tool("update_memory", {"memoryId": kept, "userId": "erin", "salience": False})
            ),
            refused(
                await t.call_tool("update_memory", {"memoryId": kept, "userId": "erin", "strength": True})
            ),
            refused(await t.call_tool("recall", {"userId": "erin", "limit": True})),
        ]
        half_depth = refused(
            await t.call_tool("breakdown", {"problem": "Plan the office move", "maxDepth": 2.5})
        )
        empty = refused(await t.call_tool("batch_forget", {"memoryIds": []}))
        left = data(await t.call_tool("recall", {"userId": "erin"}))
    assert (made["successCount"], made["failureCount"]) == (2, 3)
    assert [c["content"] for c in made["created"]] == [
        "Erin reviews pull requests every morning",
        "Erin prefers written design docs over meetings",
    ]
    assert [f["index"] for f in made["failures"]] == [1, 2, 3]
    assert made["failures"][0]["error"] == "Invalid memory: Invalid sector"  # the seed's error
    assert "content" in made["failures"][2]["error"]
    assert isinstance(made["processingTime"], int)
    assert "soft" in soft_yes["error"] and "memoryIds" in empty["error"]
    # a number given as true or false is refused, not read as 1 or 0 (and stored)
    assert [
        "salience" in flags[0]["error"],
        "strength" in flags[1]["error"],
        "limit" in flags[2]["error"],
    ] == [True] * 3
    assert "maxDepth must be an integer" in half_depth["error"]
    assert (
        made["failures"][1]["error"]
        == "Invalid memory: each memory must be an object with content and primarySector"
    )
    assert sorted(m["id"] for m in left["memories"]) == sorted(c["memoryId"] for c in made["created"])
    assert all(m["strength"] > 0 for m in left["memories"])  # the refused forget changed nothing
    assert all(m["salience"] > 0 for m in left["memories"])  # nor the refused updates
    assert left["memories"][0]["metadata"] | {"keywords": None} == {
        "keywords": None,
        "tags": [],
        "category": "general",
        "context": "",
        "importance": 0.5,
        "isAtomic": True,
    }


async def test_a_quote_left_open_searches_the_phrase_to_the_end(live: LiveServer) -> None:
    async with thought(live) as t:
        await t.call_tool(
            "remember",
            {
                "content": "The new york office moves to Brooklyn in May",
                "userId": "finn",
                "sessionId": "s1",
                "primarySector": "semantic",
            },
        )
        found = data(await t.call_tool("search", {"userId": "finn", "text": 'office "new york'}))
    assert [m["content"] for m in found["memories"]] == ["The new york office moves to Brooklyn in May"]
