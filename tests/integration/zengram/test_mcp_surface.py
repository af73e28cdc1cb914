"""The zengram MCP surface (`/mcp/zengram`, `cairn mcp --surface zengram`) through the official MCP
client: tools/list as seed 001 has it, every tool over HTTP and stdio, results and failures as
zengram's wrapper shows them, and one brain seen through both zengram and the canonical surface."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from tests.integration.mcp.conftest import LiveServer, ok, start_server
from tests.integration.zengram.conftest import body, failure

pytestmark = pytest.mark.anyio
CAIRN = str(Path(sys.executable).parent / "cairn")

# Seed 001: each tool's parameters and which are required (brain_search's `index` format is the
# real server's addition; brain_import takes only `data`, as the seed has it).
SEED: dict[str, tuple[set[str], set[str]]] = {
    "brain_store": (
        {
            "type",
            "content",
            "source_agent",
            "client_id",
            "category",
            "importance",
            "key",
            "subject",
            "status_value",
            "knowledge_category",
            "valid_from",
            "valid_to",
        },
        {"type", "content", "source_agent"},
    ),
    "brain_search": (
        {
            "query",
            "type",
            "source_agent",
            "client_id",
            "limit",
            "format",
            "include_superseded",
            "knowledge_category",
            "at_time",
        },
        {"query"},
    ),
    "brain_briefing": ({"since", "agent", "include", "format", "limit"}, {"since"}),
    "brain_query": ({"type", "source_agent", "category", "client_id", "since", "key", "subject"}, {"type"}),
    "brain_stats": (set(), set()),
    "brain_consolidate": ({"action", "job_id", "sync"}, set()),
    "brain_entities": ({"action", "name", "type", "limit"}, {"action"}),
    "brain_delete": ({"memory_id", "reason"}, {"memory_id"}),
    "brain_update": ({"memory_id", "content", "importance", "knowledge_category", "metadata"}, {"memory_id"}),
    "brain_export": ({"client_id", "type", "since", "limit"}, set()),
    "brain_import": ({"data"}, {"data"}),
    "brain_reflect": ({"topic", "client_id", "limit"}, {"topic"}),
    "brain_research": ({"topic", "client_id", "max_iterations"}, {"topic"}),
}
TYPES = {
    "limit": "number",
    "include_superseded": "boolean",
    "sync": "boolean",
    "metadata": "object",
    "data": "array",
    "max_iterations": "number",
}


async def test_tools_list_matches_the_seed(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        info = client.server_info if hasattr(client, "server_info") else None

    assert set(tools) == set(SEED)
    for name, (params, required) in SEED.items():
        schema = tools[name].input_schema
        assert set(schema.get("properties", {})) == params, name
        assert set(schema.get("required", [])) == required, name
        for param, kind in TYPES.items():
            if param in params:
                assert schema["properties"][param]["type"] == kind, (name, param)
    assert "index" in tools["brain_search"].input_schema["properties"]["format"]["enum"]
    assert info is None or info.name == "zengram"


async def test_every_tool_over_http_as_the_wrapper_answers(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        stored = body(
            await z.call_tool(
                "brain_store",
                {"type": "fact", "content": "Acme runs Next.js 14", "key": "acme-stack", "client_id": "acme"},
            )
        )
        event = body(
            await z.call_tool(
                "brain_store",
                {"type": "event", "content": "Deployed the Acme site", "source_agent": "deploy-bot"},
            )
        )
        found = body(await z.call_tool("brain_search", {"query": "Acme runs Next.js"}))
        brief = body(
            await z.call_tool("brain_briefing", {"since": "2000-01-01T00:00:00Z", "agent": "claude-code"})
        )
        facts = body(await z.call_tool("brain_query", {"type": "facts", "key": "acme"}))
        stats = body(await z.call_tool("brain_stats", {}))
        started = body(await z.call_tool("brain_consolidate", {"action": "run", "sync": True}))
        status = body(await z.call_tool("brain_consolidate", {"action": "status"}))
        updated = body(await z.call_tool("brain_update", {"memory_id": event["id"], "importance": "high"}))
        deleted = body(await z.call_tool("brain_delete", {"memory_id": event["id"]}))
        exported = body(await z.call_tool("brain_export", {"client_id": "acme"}))
        restored = body(await z.call_tool("brain_import", {"data": exported["memories"]}))
        shapeless = failure(await z.call_tool("brain_import", {}))
        reflected = body(await z.call_tool("brain_reflect", {"topic": "what Acme runs", "limit": 5}))
        topicless = failure(await z.call_tool("brain_reflect", {"topic": " "}))
        disabled = failure(await z.call_tool("brain_research", {"topic": "what does acme run?"}))
        fractional = failure(await z.call_tool("brain_research", {"topic": "x", "max_iterations": 1.5}))
        techs = body(await z.call_tool("brain_entities", {"action": "list", "type": "technology"}))
        nextjs = body(await z.call_tool("brain_entities", {"action": "get", "name": "nextjs"}))
        linked = body(await z.call_tool("brain_entities", {"action": "memories", "name": "acme"}))
        entity_stats = body(await z.call_tool("brain_entities", {"action": "stats"}))
        nameless = failure(await z.call_tool("brain_entities", {"action": "get"}))
        badtype = failure(await z.call_tool("brain_entities", {"action": "list", "type": "planet"}))
        local = failure(await z.call_tool("brain_store", {"content": "no type"}))
        api = failure(await z.call_tool("brain_store", {"type": "rumour", "content": "x"}))
        nothing = failure(await z.call_tool("brain_update", {"memory_id": stored["id"]}))
        missing = failure(await z.call_tool("brain_delete", {"memory_id": "mem_nope"}))
        unknown = failure(await z.call_tool("brain_teleport", {}))
        # The result text is the API body, pretty-printed as zengram 4.3.0 prints it.
        raw = (await z.call_tool("brain_stats", {})).content[0]

    assert stored["deduplicated"] is False and len(stored["content_hash"]) == 16
    assert found["results"][0]["id"] == stored["id"]
    assert [e["content"] for e in brief["events"]] == ["Deployed the Acme site"]
    assert facts["results"][0]["value"] == "Acme runs Next.js 14"
    assert stats["by_type"] == {"event": 1, "fact": 1, "decision": 0, "status": 0}
    assert started["status"] == "complete" and "events_expired" in started
    assert status["is_running"] is False and status["last_run_at"]
    assert updated["updated_fields"] == ["importance"] and deleted["deleted"] is True
    assert [m["id"] for m in exported["memories"]] == [stored["id"]] and exported["limit"] == 500
    assert restored == {"imported": 0, "skipped": 1, "errors": 0}  # still present: never overwritten
    assert shapeless.startswith("Error: API POST /export/import: 400") and 'data\\" array' in shapeless
    assert reflected["memories_analyzed"] >= 1 and stored["id"] in reflected["cited_memory_ids"]
    assert reflected["llm"] == {"provider": "extractive", "model": "extractive"}
    assert topicless == 'Error: "topic" is required (non-empty string)'
    assert disabled.startswith('Error: API POST /research: 503 {"error":"research_disabled"')
    assert fractional == 'Error: "max_iterations" must be an integer (1-4)'
    assert "Next.js" in {e["canonical_name"] for e in techs["entities"]}
    assert nextjs["canonical_name"] == "Next.js" and nextjs["entity_type"] == "technology"
    assert linked["entity"] == "acme" and [m["memory_id"] for m in linked["memory_links"]] == [stored["id"]]
    assert entity_stats["total"] >= 3 and entity_stats["by_type"]["client"] == 1
    assert nameless == "Error: name is required for get/memories actions"
    assert (
        badtype.startswith("Error: API GET /entities?type=planet: 400") and "Invalid entity type" in badtype
    )
    assert local == 'Error: "type" is required (one of: event, fact, decision, status)'
    assert api.startswith('Error: API POST /memory: 400 {"error":"Invalid type: rumour.')
    assert nothing.startswith("Error: must provide at least one field to update")
    assert missing == 'Error: API DELETE /memory/mem_nope: 404 {"error":"Memory not found"}'
    assert unknown == "Unknown tool: brain_teleport"
    assert raw.type == "text" and raw.text.startswith('{\n  "total_memories"')


async def test_export_import_and_research_when_enabled(tmp_path: Path) -> None:
    for live in start_server(tmp_path, zengram_research_enabled=True):
        async with Client(f"{live.base}/mcp/zengram") as z:
            made = body(
                await z.call_tool(
                    "brain_store", {"type": "decision", "content": "Redis runs the API cache, as we decided"}
                )
            )
            dump = body(await z.call_tool("brain_export", {}))["memories"]
            body(await z.call_tool("brain_delete", {"memory_id": made["id"]}))
            restored = body(await z.call_tool("brain_import", {"data": dump}))
            found = body(await z.call_tool("brain_search", {"query": "Redis API cache"}))
            answer = body(await z.call_tool("brain_research", {"topic": "What runs the API cache?"}))

        assert restored == {"imported": 1, "skipped": 0, "errors": 0}
        assert found["results"][0]["id"] == made["id"]
        assert answer["partial"] is False and answer["cited_memory_ids"] == [made["id"]]
        assert answer["query_trace"][0]["query"] == "What runs the API cache?"


async def test_brain_search_looks_without_counting_when_the_request_says_read_only(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        body(await z.call_tool("brain_store", {"type": "fact", "content": "The tea urn is on floor three"}))
        query = {"query": "where is the tea urn", "format": "full"}
        looked = [
            body(await z.call_tool("brain_search", query, meta={"cairn/read_only": True}))["results"][0]
            for _ in range(3)
        ]  # as GET /memory/search?read_only=true: the seed's tool has no parameter for it
        body(await z.call_tool("brain_search", query, meta={"cairn/read_only": "yes"}))  # only JSON true
        body(await z.call_tool("brain_search", query))
        after = body(await z.call_tool("brain_search", query, meta={"cairn/read_only": True}))["results"][0]

    assert [r["access_count"] for r in looked] == [0, 0, 0]
    assert after["access_count"] == 2 and after["last_accessed_at"] is not None


async def test_one_brain_through_both_surfaces(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z, Client(live.url) as canonical:
        body(
            await z.call_tool("brain_store", {"type": "decision", "content": "We chose Postgres for billing"})
        )
        brain = ok(await canonical.call_tool("memory_list_brains", {}))["items"][0]["slug"]
        hits = ok(await canonical.call_tool("memory_search", {"brain": brain, "query": "postgres billing"}))[
            "hits"
        ]
        ok(
            await canonical.call_tool(
                "memory_remember",
                {
                    "brain": brain,
                    "path": "memory/global/kettle.md",
                    "content": "The kettle descales on Fridays.",
                },
            )
        )
        seen = body(await z.call_tool("brain_search", {"query": "kettle descales"}))

    assert any("Postgres for billing" in h["content"] for h in hits)
    assert seen["results"] and seen["results"][0]["content"] == "The kettle descales on Fridays."
    assert seen["results"][0]["type"] == "note"


async def test_every_tool_over_stdio(tmp_path: Path) -> None:
    data = tmp_path / "data"
    params = StdioServerParameters(
        command=CAIRN,
        args=["mcp", "--surface", "zengram", "--data-dir", str(data)],
        env={"CAIRN_DATA_DIR": str(data)},
    )
    green = {"type": "status", "content": "deploys are green", "subject": "deploys", "status_value": "green"}
    red = {"type": "status", "content": "deploys are red", "subject": "deploys", "status_value": "red"}
    called: set[str] = set()
    async with Client(params) as z:

        async def tool(name: str, arguments: dict[str, Any]) -> CallToolResult:
            called.add(name)
            return await z.call_tool(name, arguments)

        names = {t.name for t in (await z.list_tools()).tools}
        stored = body(await tool("brain_store", green))
        again = body(await tool("brain_store", red))
        note = body(await tool("brain_store", {"type": "event", "content": "Rolled Kubernetes to 1.31"}))
        statuses = body(await tool("brain_query", {"type": "statuses"}))
        found = body(await tool("brain_search", {"query": "deploys", "include_superseded": True}))
        brief = body(await tool("brain_briefing", {"since": "2000-01-01T00:00:00Z", "include": "all"}))
        stats = body(await tool("brain_stats", {}))
        entities = body(await tool("brain_entities", {"action": "get", "name": "k8s"}))
        updated = body(await tool("brain_update", {"memory_id": note["id"], "importance": "high"}))
        exported = body(await tool("brain_export", {"type": "status"}))
        deleted = body(await tool("brain_delete", {"memory_id": note["id"]}))
        imported = body(await tool("brain_import", {"data": exported["memories"]}))
        reflected = body(await tool("brain_reflect", {"topic": "deploys"}))
        consolidated = body(await tool("brain_consolidate", {"action": "run", "sync": True}))
        research = failure(await tool("brain_research", {"topic": "why are deploys red?"}))

    assert names == set(SEED) == called
    assert again["supersedes"] == stored["id"]
    assert [r["status"] for r in statuses["results"]] == ["red"]
    assert {r["id"] for r in found["results"]} >= {stored["id"], again["id"]}
    assert brief["summary"]["status_changes"] == 2 and stats["by_type"]["status"] == 2
    assert entities["canonical_name"] == "Kubernetes"
    assert updated["updated_fields"] == ["importance"] and deleted["deleted"] is True
    assert {m["id"] for m in exported["memories"]} == {again["id"]}  # active only, by default
    assert imported["imported"] + imported["skipped"] == 1 and imported["errors"] == 0
    assert reflected["memories_analyzed"] >= 1 and consolidated["status"] == "complete"
    assert research.startswith("Error: API POST /research: 503") and "research_disabled" in research
