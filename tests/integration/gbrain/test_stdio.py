"""All 17 tools over stdio (`cairn mcp --surface gbrain --data-dir …`, the real local adapters:
SQLite records and FTS5, the ONNX embedder), as a gbrain client spawns `gbrain serve`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from tests.integration.gbrain.conftest import body, page, refused, text
from tests.integration.gbrain.test_tools_list import SEED

pytestmark = pytest.mark.anyio
CAIRN = str(Path(sys.executable).parent / "cairn")


async def test_every_tool_over_stdio(tmp_path: Path) -> None:
    data = tmp_path / "data"
    params = StdioServerParameters(
        command=CAIRN,
        args=["mcp", "--surface", "gbrain", "--data-dir", str(data)],
        env={"CAIRN_DATA_DIR": str(data)},
    )
    called: set[str] = set()
    async with Client(params) as g:

        async def tool(name: str, arguments: dict[str, Any]) -> CallToolResult:
            called.add(name)
            return await g.call_tool(name, arguments)

        names = {t.name for t in (await g.list_tools()).tools}
        alice = page("Alice", "Alice works at Acme Corp. She forges anvils.", type="person")
        created = text(await tool("brain_put", {"slug": "people/alice", "content": alice}))
        text(
            await tool(
                "brain_put", {"slug": "companies/acme", "content": page("Acme", "Acme Corp sells anvils.")}
            )
        )
        text(
            await tool(
                "brain_put", {"slug": "notes/x", "content": page("Alice", "Alice works at Globex Inc.")}
            )
        )
        conflict = await refused(g, "brain_put", {"slug": "people/alice", "content": "x"})
        rendered = text(await tool("brain_get", {"slug": "people/alice"}))
        found = body(await tool("brain_search", {"query": "anvils"}))
        queried = body(await tool("brain_query", {"query": "anvils", "depth": "auto"}))
        listed = body(await tool("brain_list", {"page_type": "person"}))
        works_at = {"relationship": "works_at", "valid_from": "2020-01-01"}
        linked = text(
            await tool("brain_link", {"from_slug": "people/alice", "to_slug": "companies/acme", **works_at})
        )
        back = body(await tool("brain_backlinks", {"slug": "companies/acme"}))
        graph = body(await tool("brain_graph", {"slug": "people/alice"}))
        closed = text(await tool("brain_link_close", {"link_id": back[0]["id"], "valid_until": "2021-01"}))
        contradictions = body(await tool("brain_check", {"slug": "people/alice"}))
        timeline = body(await tool("brain_timeline", {"slug": "people/alice"}))
        tags = body(await tool("brain_tags", {"slug": "people/alice", "add": ["founder"]}))
        gap = body(await tool("brain_gap", {"query": "Who funds Alice?"}))
        gaps = body(await tool("brain_gaps", {"resolved": True}))
        stats = body(await tool("brain_stats", {}))
        collections = body(await tool("brain_collections", {}))
        raw = body(await tool("brain_raw", {"slug": "people/alice", "source": "exa", "data": {"k": 1}}))
        duplicate = await refused(g, "brain_raw", {"slug": "people/alice", "source": "exa", "data": {"k": 2}})

    assert names == set(SEED) == called
    assert created == "Created default::people/alice (version 1)" and conflict.code == -32009
    assert "slug: default::people/alice" in rendered
    assert {h["slug"] for h in found} == {"default::people/alice", "default::companies/acme"}
    assert found[0]["score"] > 0 and {h["slug"] for h in queried} >= {h["slug"] for h in found}
    assert [p["slug"] for p in listed] == ["default::people/alice"]
    assert linked == "Linked default::people/alice → default::companies/acme (works_at)"
    assert back[0]["from_slug"] == "default::people/alice" and len(graph["edges"]) == 1
    assert closed == f"Closed link {back[0]['id']} valid_until=2021-01"
    assert [c["description"] for c in contradictions] == [
        "Alice has conflicting works_at assertions: Acme Corp vs Globex Inc"
    ]
    assert timeline == {"slug": "default::people/alice", "entries": []} and tags == ["founder"]
    assert gaps[0]["query_hash"] == gap["query_hash"]
    assert stats["page_count"] == 3 and stats["link_count"] == 1 and stats["embedding_count"] >= 3
    assert [c["name"] for c in collections] == ["default"] and raw == {"id": 1}
    assert duplicate.code == -32003
