"""zengram's own published MCP wrapper, `@zensystemai/zengram-mcp@4.5.0` (pinned in tests/clients),
run unmodified against `cairn serve`'s /zengram API and driven by the official MCP client over
stdio: what an agent configured for zengram sees when it is pointed at Cairn."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.integration.mcp.conftest import LiveServer, start_server
from tests.integration.mcp.node_clients import CLIENTS, node
from tests.integration.zengram.conftest import body, failure

pytestmark = pytest.mark.anyio
WRAPPER = CLIENTS / "node_modules" / "@zensystemai" / "zengram-mcp" / "src" / "index.js"


def wrapper(base: str) -> StdioServerParameters:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: zengram's wrapper is a Node program")
    env = {"PATH": os.environ.get("PATH", ""), "BRAIN_API_URL": f"{base}/zengram", "BRAIN_API_KEY": "any-key"}
    return StdioServerParameters(command=node(), args=[str(WRAPPER)], env=env)


async def test_the_wrapper_stores_searches_queries_briefs_updates_and_deletes(live: LiveServer) -> None:
    async with stdio_client(wrapper(live.base)) as (read, write), ClientSession(read, write) as mcp:
        init = await mcp.initialize()
        names = {t.name for t in (await mcp.list_tools()).tools}

        first = body(
            await mcp.call_tool(
                "brain_store",
                {"type": "fact", "content": "Acme runs WordPress", "key": "acme-stack", "client_id": "acme"},
            )
        )
        second = body(
            await mcp.call_tool(
                "brain_store",
                {
                    "type": "fact",
                    "content": "Acme moved to Next.js 14",
                    "key": "acme-stack",
                    "client_id": "acme",
                    "importance": "high",
                },
            )
        )
        event = body(
            await mcp.call_tool(
                "brain_store",
                {"type": "event", "content": "Deployed the Acme site", "source_agent": "deploy-bot"},
            )
        )
        found = body(
            await mcp.call_tool("brain_search", {"query": "what does acme run", "client_id": "acme"})
        )
        index = body(await mcp.call_tool("brain_search", {"query": "acme", "format": "index"}))
        facts = body(await mcp.call_tool("brain_query", {"type": "facts", "key": "acme"}))
        brief = body(
            await mcp.call_tool("brain_briefing", {"since": "2000-01-01T00:00:00Z", "agent": "claude-code"})
        )
        stats = body(await mcp.call_tool("brain_stats", {}))
        updated = body(
            await mcp.call_tool("brain_update", {"memory_id": event["id"], "importance": "critical"})
        )
        deleted = body(await mcp.call_tool("brain_delete", {"memory_id": event["id"], "reason": "test"}))
        techs = body(await mcp.call_tool("brain_entities", {"action": "list", "type": "technology"}))
        mentions = body(await mcp.call_tool("brain_entities", {"action": "memories", "name": "next.js"}))
        run = body(await mcp.call_tool("brain_consolidate", {"action": "run", "sync": True}))
        status = body(await mcp.call_tool("brain_consolidate", {"action": "status"}))
        missing = failure(await mcp.call_tool("brain_delete", {"memory_id": "mem_nope"}))
        bad = failure(await mcp.call_tool("brain_store", {"type": "rumour", "content": "x"}))

    assert init.server_info.name == "zengram"
    assert len(names) == 13 and {"brain_store", "brain_search", "brain_research"} <= names
    assert second["supersedes"] == first["id"] and event["deduplicated"] is False
    assert [r["id"] for r in found["results"]][:1] == [second["id"]]
    assert found["results"][0]["content"] == "Acme moved to Next.js 14"
    assert {"summary", "effective_score"} <= set(index["results"][0])
    assert [r["value"] for r in facts["results"]] == ["Acme moved to Next.js 14"]
    assert [e["content"] for e in brief["events"]] == ["Deployed the Acme site"]  # deploy-bot's, not ours
    assert stats["by_type"]["fact"] == 2 and stats["active"] == 2
    assert updated["updated_fields"] == ["importance"]
    assert deleted["deleted"] is True
    assert {"Next.js", "WordPress"} <= {e["canonical_name"] for e in techs["entities"]}
    assert [m["memory_id"] for m in mentions["memory_links"]] == [second["id"]]
    assert run["status"] == "complete" and status["is_running"] is False
    assert missing.startswith("Error: API DELETE /memory/mem_nope: 404") and '"Memory not found"' in missing
    assert bad.startswith("Error: API POST /memory: 400") and "Invalid type: rumour" in bad


async def test_the_wrapper_exports_imports_reflects_and_researches(tmp_path: Path) -> None:
    for live in start_server(tmp_path, zengram_research_enabled=True):
        async with stdio_client(wrapper(live.base)) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            decision = body(
                await mcp.call_tool(
                    "brain_store",
                    {
                        "type": "decision",
                        "content": "Redis runs the API cache, as we decided",
                        "client_id": "acme",
                    },
                )
            )
            status = body(
                await mcp.call_tool(
                    "brain_store",
                    {
                        "type": "status",
                        "content": "The API is degraded",
                        "subject": "api",
                        "client_id": "acme",
                    },
                )
            )
            dump = body(await mcp.call_tool("brain_export", {"client_id": "acme"}))
            refused = failure(await mcp.call_tool("brain_import", {"data": dump["memories"]}))
            for m in (decision, status):
                body(await mcp.call_tool("brain_delete", {"memory_id": m["id"]}))
            restored = body(
                await mcp.call_tool("brain_import", {"data": dump["memories"], "operator_approved": True})
            )
            after = body(await mcp.call_tool("brain_export", {"client_id": "acme"}))
            reflected = body(
                await mcp.call_tool("brain_reflect", {"topic": "API cache", "client_id": "acme"})
            )
            answer = body(
                await mcp.call_tool(
                    "brain_research", {"topic": "What runs the API cache?", "max_iterations": 2}
                )
            )
            fractional = failure(await mcp.call_tool("brain_research", {"topic": "x", "max_iterations": 1.5}))

    assert {m["id"] for m in dump["memories"]} == {decision["id"], status["id"]} and dump["limit"] == 500
    assert refused.startswith('Error: "operator_approved" must be true')
    assert restored == {"imported": 2, "skipped": 0, "errors": 0}
    assert {m["id"]: m["content"] for m in after["memories"]} == {
        m["id"]: m["content"] for m in dump["memories"]
    }
    # Only the memory about the API cache is relevant, not the one about the API's state.
    assert reflected["memories_analyzed"] == 1 and reflected["llm"]["provider"] == "extractive"
    assert set(reflected["cited_memory_ids"]) == {decision["id"]}
    assert answer["partial"] is False and decision["id"] in answer["cited_memory_ids"]
    assert answer["iterations"] == 1 and "extractive" in answer["warning"]
    assert fractional == 'Error: "max_iterations" must be an integer (1-4)'
