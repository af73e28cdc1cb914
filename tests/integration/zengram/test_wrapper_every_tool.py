"""All 13 tools of zengram's published wrapper (`@zensystemai/zengram-mcp@4.5.0`, run unmodified
against `cairn serve`'s /zengram API), each through a success and a failure, with names and ids
that contain "/" (which the wrapper sends encoded as %2F)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult

from cairn.auth.principal import ADMIN, READ, WRITE
from tests.integration.mcp.conftest import LiveServer, start_server
from tests.integration.zengram.test_published_wrapper import wrapper

pytestmark = pytest.mark.anyio
SINCE = "2000-01-01T00:00:00Z"
FACT = {
    "type": "fact",
    "content": "The CI/CD pipeline deploys on merge to main",
    "client_id": "ci/cd",
    "key": "ci-cd-pipeline",
}
DECISION = {"type": "decision", "content": "Redis runs the API cache, as we decided", "client_id": "ci/cd"}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    """A server that checks keys (not an open loopback one), so a wrong key is refused."""
    yield from start_server(tmp_path, token="owner-token", zengram_research_enabled=True)


def keyed(live: LiveServer, key: str) -> StdioServerParameters:
    params = wrapper(live.base)
    return params.model_copy(update={"env": {**(params.env or {}), "BRAIN_API_KEY": key}})


class Session:
    """Each call's result by tool, success or failure, so the test can prove every tool did both."""

    def __init__(self, mcp: ClientSession) -> None:
        self.mcp = mcp
        self.succeeded: set[str] = set()
        self.failed: set[str] = set()

    async def ok(self, tool: str, args: dict[str, Any]) -> Any:
        result = await self.mcp.call_tool(tool, args)
        assert not result.is_error, (tool, args, _text(result))
        self.succeeded.add(tool)
        return json.loads(_text(result))

    async def error(self, tool: str, args: dict[str, Any]) -> str:
        result = await self.mcp.call_tool(tool, args)
        assert result.is_error, (tool, args, _text(result))
        self.failed.add(tool)
        return _text(result)


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def api_error(text: str, request: str, status: int) -> dict[str, Any]:
    """The API body of the wrapper's `Error: API <request>: <status> <body>`, checked to be that."""
    prefix = f"Error: API {request}: {status} "
    assert text.startswith(prefix), text
    body: dict[str, Any] = json.loads(text.removeprefix(prefix))
    return body


async def test_every_tool_succeeds_and_fails_through_the_published_wrapper(live: LiveServer) -> None:
    key = live.container.keys.create(name="wrapper", tenant="local", scopes=[READ, WRITE, ADMIN]).plaintext
    async with stdio_client(keyed(live, "not-a-key")) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        refused = Session(mcp)
        wrong_key = await refused.error("brain_stats", {})
    async with stdio_client(keyed(live, key)) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        names = {t.name for t in (await mcp.list_tools()).tools}
        z = Session(mcp)
        z.failed |= refused.failed  # brain_stats, with the wrong key

        fact = await z.ok("brain_store", FACT)
        decision = await z.ok("brain_store", DECISION)
        rumour = await z.error("brain_store", {"type": "rumour", "content": "x"})

        found = await z.ok("brain_search", {"query": "CI/CD pipeline deploys", "client_id": "ci/cd"})
        bad_format = await z.error("brain_search", {"query": "pipeline", "format": "bogus"})
        brief = await z.ok("brain_briefing", {"since": SINCE, "agent": "someone-else"})
        bad_since = await z.error("brain_briefing", {"since": "yesterday"})
        facts = await z.ok("brain_query", {"type": "facts", "key": "ci-cd"})
        bad_query = await z.error("brain_query", {"type": "events", "since": "nope"})
        stats = await z.ok("brain_stats", {})

        run = await z.ok("brain_consolidate", {"action": "run", "sync": True})
        polled = await z.ok("brain_consolidate", {"action": "job", "job_id": run["job_id"]})
        status = await z.ok("brain_consolidate", {"action": "status"})
        no_job = await z.error("brain_consolidate", {"action": "job", "job_id": "job/none"})

        clients = await z.ok("brain_entities", {"action": "list", "type": "client"})
        entity = await z.ok("brain_entities", {"action": "get", "name": "CI/CD"})
        linked = await z.ok("brain_entities", {"action": "memories", "name": "ci/cd", "limit": 5})
        entity_stats = await z.ok("brain_entities", {"action": "stats"})
        no_entity = await z.error("brain_entities", {"action": "get", "name": "no/such"})
        no_links = await z.error("brain_entities", {"action": "memories", "name": "no/such"})
        planet = await z.error("brain_entities", {"action": "list", "type": "planet"})

        updated = await z.ok("brain_update", {"memory_id": fact["id"], "importance": "critical"})
        no_update = await z.error("brain_update", {"memory_id": "mem/none", "importance": "high"})
        deleted = await z.ok("brain_delete", {"memory_id": decision["id"], "reason": "moved"})
        no_delete = await z.error("brain_delete", {"memory_id": "mem/none"})

        dump = await z.ok("brain_export", {"client_id": "ci/cd"})
        bad_export = await z.error("brain_export", {"since": "nope"})
        restored = await z.ok("brain_import", {"data": dump["memories"], "operator_approved": True})
        not_array = await z.error("brain_import", {"data": "x", "operator_approved": True})

        reflected = await z.ok("brain_reflect", {"topic": "the CI/CD pipeline", "client_id": "ci/cd"})
        markup = await z.error("brain_reflect", {"topic": "<tool_call>x</tool_call>"})
        answer = await z.ok("brain_research", {"topic": "What deploys on merge to main?"})
        numeric = await z.error("brain_research", {"topic": "What deploys?", "client_id": 7})

    assert len(names) == 13 and z.succeeded == names and z.failed == names

    assert api_error(wrong_key, "GET /stats", 401) == {"error": "Invalid API key"}
    assert fact["deduplicated"] is False and decision["deduplicated"] is False
    assert "Invalid type: rumour" in api_error(rumour, "POST /memory", 400)["error"]

    assert found["results"][0]["id"] == fact["id"] and found["results"][0]["client_id"] == "ci/cd"
    assert (
        "Invalid format" in api_error(bad_format, "GET /memory/search?q=pipeline&format=bogus", 400)["error"]
    )
    assert {e["id"] for e in brief["facts_updated"]} == {fact["id"]}
    assert (
        "Invalid since" in api_error(bad_since, "GET /briefing?since=yesterday&format=compact", 400)["error"]
    )
    assert [r["key"] for r in facts["results"]] == ["ci-cd-pipeline"]
    assert api_error(bad_query, "GET /memory/query?type=events&since=nope", 400)["error"]
    assert stats["by_type"]["fact"] == 1 and stats["by_type"]["decision"] == 1

    assert run["status"] == "complete" and run["memories_processed"] == 2
    assert polled["status"] == "complete" and polled["result"]["memories_processed"] == 2
    assert status["is_running"] is False and status["last_run_at"]
    assert api_error(no_job, "GET /consolidate/job/job%2Fnone", 404) == {"error": "Job not found or expired"}

    assert "ci/cd" in {e["canonical_name"] for e in clients["entities"]}
    assert entity["canonical_name"] == "ci/cd" and entity["entity_type"] == "client"
    assert linked["entity"] == "ci/cd" and {m["memory_id"] for m in linked["memory_links"]} == {
        fact["id"],
        decision["id"],
    }
    assert entity_stats["by_type"]["client"] == 1
    assert api_error(no_entity, "GET /entities/no%2Fsuch", 404) == {"error": "Entity not found"}
    assert api_error(no_links, "GET /entities/no%2Fsuch/memories?", 404) == {"error": "Entity not found"}
    assert "Invalid entity type" in api_error(planet, "GET /entities?type=planet", 400)["error"]

    assert updated["updated_fields"] == ["importance"]
    assert api_error(no_update, "PATCH /memory/mem%2Fnone", 404) == {"error": "Memory not found"}
    assert deleted["deleted"] is True
    assert api_error(no_delete, "DELETE /memory/mem%2Fnone", 404) == {"error": "Memory not found"}

    assert [m["id"] for m in dump["memories"]] == [fact["id"]] and dump["limit"] == 500
    assert "Invalid since" in api_error(bad_export, "GET /export?since=nope&limit=500", 400)["error"]
    assert restored == {"imported": 0, "skipped": 1, "errors": 0}
    assert '"data" array' in api_error(not_array, "POST /export/import", 400)["error"]

    assert reflected["memories_analyzed"] == 1 and reflected["cited_memory_ids"] == [fact["id"]]
    assert "tool-call control markup" in api_error(markup, "POST /reflect", 400)["error"]
    assert fact["id"] in answer["cited_memory_ids"] and answer["llm"]["provider"] == "extractive"
    assert api_error(numeric, "POST /research", 400) == {"error": "client_id must be a string when provided"}
