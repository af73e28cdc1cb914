"""Where seed 001 says how a `brain_*` tool behaves, Cairn's MCP surface follows it: brain_import
needs only `data` (and overwrites nothing still present), brain_briefing's agent defaults to
"claude-code", credentials are redacted whatever their length, and brain_reflect analyses only
memories relevant to its topic."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer
from tests.integration.zengram.conftest import body, failure

pytestmark = pytest.mark.anyio
SINCE = "2000-01-01T00:00:00Z"


async def test_brain_import_needs_only_data_and_never_overwrites_a_memory_still_present(
    live: LiveServer,
) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        tools = {t.name: t for t in (await z.list_tools()).tools}
        kept = body(await z.call_tool("brain_store", {"type": "fact", "content": "Acme bills monthly"}))
        gone = body(await z.call_tool("brain_store", {"type": "decision", "content": "We chose Postgres"}))
        dump = body(await z.call_tool("brain_export", {}))["memories"]
        body(await z.call_tool("brain_delete", {"memory_id": gone["id"]}))
        tampered = [{**row, "content": f"{row['content']} (edited)"} for row in dump]
        fresh = {"id": "mem_restored_1", "type": "event", "content": "Shipped the billing page"}
        restored = body(await z.call_tool("brain_import", {"data": [*tampered, fresh]}))
        after = {m["id"]: m for m in body(await z.call_tool("brain_export", {}))["memories"]}
        refused = failure(
            await z.call_tool("brain_import", {"data": [{"type": "rumour", "content": "x"}] * 501})
        )

    schema = tools["brain_import"].input_schema
    assert set(schema["properties"]) == {"data"} and schema["required"] == ["data"]
    # The present fact is skipped, not overwritten; the deleted decision is restored in place.
    assert restored == {"imported": 2, "skipped": 1, "errors": 0}
    assert after[kept["id"]]["content"] == "Acme bills monthly"
    assert after[gone["id"]]["content"] == "We chose Postgres (edited)" and after[gone["id"]]["active"]
    assert after["mem_restored_1"]["content"] == "Shipped the billing page"
    assert refused.startswith("Error: API POST /export/import: 400") and "limited to 500" in refused


async def test_the_http_import_still_wants_operator_approval(live: LiveServer) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=f"{live.base}/zengram", headers={"x-api-key": "k"}) as http:
        refused = await http.post("/export/import", json={"data": []})
        approved = await http.post("/export/import", json={"data": [], "operator_approved": True})

    assert refused.status_code == 403 and "operator_approved" in refused.json()["error"]
    assert approved.status_code == 200 and approved.json() == {"imported": 0, "skipped": 0, "errors": 0}


async def test_a_briefing_without_agent_leaves_out_claude_codes_own_entries(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        body(await z.call_tool("brain_store", {"type": "event", "content": "I refactored the parser"}))
        body(
            await z.call_tool(
                "brain_store", {"type": "event", "content": "Deployed billing", "source_agent": "deploy-bot"}
            )
        )
        default = body(await z.call_tool("brain_briefing", {"since": SINCE}))
        everything = body(await z.call_tool("brain_briefing", {"since": SINCE, "include": "all"}))
        other = body(await z.call_tool("brain_briefing", {"since": SINCE, "agent": "deploy-bot"}))
        bad = failure(await z.call_tool("brain_briefing", {"since": "yesterday"}))

    assert default["requesting_agent"] == "claude-code"
    assert [e["content"] for e in default["events"]] == ["Deployed billing"]
    assert {e["content"] for e in everything["events"]} == {"I refactored the parser", "Deployed billing"}
    assert [e["content"] for e in other["events"]] == ["I refactored the parser"]
    assert bad.startswith("Error: API GET /briefing?since=yesterday&agent=claude-code&format=compact: 400")


async def test_the_http_briefing_applies_the_same_default(live: LiveServer) -> None:
    import httpx

    async with Client(f"{live.base}/mcp/zengram") as z:
        body(await z.call_tool("brain_store", {"type": "event", "content": "I refactored the parser"}))
    async with httpx.AsyncClient(base_url=f"{live.base}/zengram", headers={"x-api-key": "k"}) as http:
        brief = (await http.get("/briefing", params={"since": SINCE})).json()

    assert brief["requesting_agent"] == "claude-code" and brief["events"] == []
    assert brief["summary"]["total_in_period"] == 1 and brief["summary"]["total_entries"] == 0


async def test_short_credentials_are_redacted_and_prose_is_not(live: LiveServer) -> None:
    prose = "The password policy needs 12 characters; reset your password: it expires in 90 days."
    async with Client(f"{live.base}/mcp/zengram") as z:
        leaky = body(
            await z.call_tool("brain_store", {"type": "event", "content": "DB login password=hunter2 works"})
        )
        plain = body(await z.call_tool("brain_store", {"type": "fact", "content": prose, "key": "pw-policy"}))
        body(
            await z.call_tool(
                "brain_update",
                {"memory_id": plain["id"], "content": f"{prose} token: t0k", "metadata": {"env": "pwd=abc"}},
            )
        )
        found = body(await z.call_tool("brain_search", {"query": "DB login password", "format": "full"}))
        rows = {m["id"]: m for m in body(await z.call_tool("brain_export", {}))["memories"]}

    assert rows[leaky["id"]]["content"] == "DB login password=[SECRET_REDACTED] works"
    assert "hunter2" not in json.dumps(found)
    assert rows[plain["id"]]["content"] == f"{prose} token: [SECRET_REDACTED]"
    assert rows[plain["id"]]["metadata"] == {"env": "pwd=[SECRET_REDACTED]"}


async def test_reflect_analyses_only_relevant_memories_and_says_when_there_are_none(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        cache = body(
            await z.call_tool(
                "brain_store", {"type": "decision", "content": "The API cache moved to Redis for persistence"}
            )
        )
        body(
            await z.call_tool(
                "brain_store", {"type": "event", "content": "Globex renewed its support contract"}
            )
        )
        body(await z.call_tool("brain_store", {"type": "fact", "content": "Marketing prefers teal banners"}))
        related = body(await z.call_tool("brain_reflect", {"topic": "the API cache and Redis"}))
        unrelated = body(await z.call_tool("brain_reflect", {"topic": "quarterly tax filing deadlines"}))

    assert related["memories_analyzed"] == 1 and related["cited_memory_ids"] == [cache["id"]]
    assert unrelated == {
        "topic": "quarterly tax filing deadlines",
        "client_id": None,
        "memories_analyzed": 0,
        "reflection": {
            "summary": "No relevant memories found for this topic.",
            "patterns": [],
            "timeline": [],
            "contradictions": [],
            "gaps": ["No memories exist about this topic — consider storing foundational context."],
        },
        "llm": None,
    }
