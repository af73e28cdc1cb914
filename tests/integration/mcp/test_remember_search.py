"""memory_remember, memory_search and memory_recall over real HTTP through the official client."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, error, ok, start_server, text

pytestmark = pytest.mark.anyio

RECORD_KEYS = {
    "id", "brain_id", "title", "path", "source", "content_type", "byte_size", "checksum_sha256",
    "metadata", "commit_sha", "created_at", "updated_at", "deleted_at",
}  # fmt: skip
HIT_KEYS = {
    "score", "path", "content", "chunk_id", "document_id", "brain_id", "brain", "title", "created_at",
    "updated_at", "metadata", "component_scores", "highlights",
}  # fmt: skip


def _offset_time(value: str) -> datetime:
    assert re.search(r"[+-]\d\d:\d\d$", value), value  # RFC 3339 with an explicit offset
    return datetime.fromisoformat(value)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_remember_returns_the_full_document_record_inline(live: LiveServer, mode: str) -> None:
    async with Client(live.url, mode=mode) as client:
        brain = ok(await client.call_tool("memory_create_brain", {"name": "Notes"}))
        result = await client.call_tool(
            "memory_remember",
            {"content": "# Saturday run\n\nI ran 10k in 55 minutes.", "tags": ["running", "health"]},
        )
    record = ok(result)
    assert set(record) == RECORD_KEYS
    assert record["brain_id"] == brain["id"]
    assert record["title"] == "Saturday run"
    assert record["path"].startswith("memory/global/") and record["path"].endswith(".md")
    assert record["metadata"]["tags"] == "running,health"
    assert record["source"] == "ingest" and record["content_type"] == "text/markdown"
    assert record["byte_size"] == len(b"# Saturday run\n\nI ran 10k in 55 minutes.")
    assert re.fullmatch(r"[0-9a-f]{64}", record["checksum_sha256"])
    assert record["deleted_at"] is None
    assert _offset_time(record["created_at"]) <= _offset_time(record["updated_at"])
    assert record["id"] in text(result) and record["path"] in text(result)
    stored = live.container.documents.read(live.container.brains.get(brain["id"]), record["path"])
    assert stored == b"# Saturday run\n\nI ran 10k in 55 minutes."


async def test_a_tag_holding_commas_is_forwarded_comma_joined_as_the_tags_it_joins(live: LiveServer) -> None:
    """As the Jeffs Brain MCP wrapper forwards tags (metadata.tags, comma-joined) and the store
    protocol's ingest reads them back: the same document a REST ingest of that metadata writes."""
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Notes", "slug": "notes"}))
        args = {"content": "# Run\n\n10k.", "tags": ["running, health", "running", "log,"], "path": "a.md"}
        record = ok(await client.call_tool("memory_remember", args))
    stored = live.container.documents.get(live.container.brains.get("notes"), "a.md")
    assert record["metadata"]["tags"] == "running,health,log"
    assert stored is not None and stored.tags == ["running", "health", "log"]


async def test_remember_at_a_given_path_with_the_seeds_leading_slash(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Notes", "slug": "notes"}))
        record = ok(
            await client.call_tool(
                "memory_remember",
                {
                    "content": "prefers tea",
                    "title": "Drinks",
                    "path": "/memory/agent/bot/drinks.md",
                    "brain": "notes",
                },
            )
        )
    assert record["path"] == "memory/agent/bot/drinks.md"
    assert record["title"] == "Drinks"


async def test_search_summary_lists_the_top_five_hits_with_320_chars_each(live: LiveServer) -> None:
    body = "zebra " + "x" * 400
    async with Client(live.url) as client:
        brain = ok(await client.call_tool("memory_create_brain", {"name": "Zoo"}))
        for n in range(7):
            ok(await client.call_tool("memory_remember", {"content": body, "path": f"memory/global/z{n}.md"}))
        result = await client.call_tool("memory_search", {"query": "zebra", "top_k": 10})
    payload = ok(result)
    assert set(payload) == {"query", "brain_id", "hits", "took_ms"}
    assert payload["query"] == "zebra" and payload["brain_id"] == brain["id"]
    assert len(payload["hits"]) == 7
    assert all(set(hit) == HIT_KEYS for hit in payload["hits"])
    assert all(hit["highlights"] == [("zebra " + "x" * 400)[:239] + "…"] for hit in payload["hits"])
    blocks = text(result).split("\n\n")
    assert len(blocks) == 5
    for n, (block, hit) in enumerate(zip(blocks, payload["hits"], strict=False), start=1):
        header, preview = block.split("\n", 1)
        assert header == f"#{n} score={hit['score']:.4f} {hit['path']}"
        assert re.fullmatch(r"#\d score=\d+\.\d{4} memory/global/z\d\.md", header)
        assert preview == body[:320]


async def test_search_with_no_hits_says_so(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Empty"}))
        result = await client.call_tool("memory_search", {"query": "anything"})
    assert ok(result)["hits"] == []
    assert "No memory notes match" in text(result)


@pytest.mark.parametrize(
    ("scope", "prefixes"),
    [
        ("global", {"memory/global/"}),
        ("project", {"memory/project/"}),
        ("agent", {"memory/agent/"}),
        ("all", {"memory/global/", "memory/project/", "memory/agent/", "notes/"}),
    ],
)
async def test_scope_selects_the_memory_namespace(live: LiveServer, scope: str, prefixes: set[str]) -> None:
    paths = ["memory/global/a.md", "memory/project/apollo/b.md", "memory/agent/bot/c.md", "notes/d.md"]
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Scopes"}))
        for path in paths:
            ok(await client.call_tool("memory_remember", {"content": "the launch checklist", "path": path}))
        hits = ok(await client.call_tool("memory_search", {"query": "launch checklist", "scope": scope}))[
            "hits"
        ]
        recalled = None
        if scope != "all":
            recalled = ok(
                await client.call_tool("memory_recall", {"query": "launch checklist", "scope": scope})
            )
    found = {h["path"] for h in hits}
    assert {p for p in found for prefix in prefixes if p.startswith(prefix)} == found
    assert len(found) == len(prefixes)
    if recalled is not None:
        assert {h["path"] for h in recalled["hits"]} == found


async def test_the_three_sort_modes(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Sorts"}))
        # The oldest note is the most relevant one: recency must overrule relevance.
        contents = ["kiwi kiwi kiwi kiwi orchard", "kiwi orchard notes", "a kiwi once"]
        for n, content in enumerate(contents):
            ok(
                await client.call_tool(
                    "memory_remember", {"content": content, "path": f"memory/global/k{n}.md"}
                )
            )
        by_sort = {
            sort: ok(await client.call_tool("memory_search", {"query": "kiwi", "sort": sort}))["hits"]
            for sort in ("relevance", "recency", "relevance_then_recency")
        }
    recency = by_sort["recency"]
    assert [h["path"] for h in recency] == [
        "memory/global/k2.md",
        "memory/global/k1.md",
        "memory/global/k0.md",
    ]
    assert [h["created_at"] for h in recency] == sorted((h["created_at"] for h in recency), reverse=True)
    relevance = by_sort["relevance"]
    assert relevance[0]["path"] == "memory/global/k0.md"
    assert [h["score"] for h in relevance] == sorted((h["score"] for h in relevance), reverse=True)
    assert {h["path"] for h in by_sort["relevance_then_recency"]} == {h["path"] for h in relevance}


async def test_top_k_limits_the_hits(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Many"}))
        for n in range(4):
            ok(await client.call_tool("memory_remember", {"content": f"walrus fact {n}"}))
        hits = ok(await client.call_tool("memory_search", {"query": "walrus", "top_k": 2}))["hits"]
        recalled = ok(await client.call_tool("memory_recall", {"query": "walrus", "top_k": 3}))["hits"]
    assert len(hits) == 2 and len(recalled) == 3


async def test_recall_without_a_session_is_memory_search(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Recall"}))
        for word in ("otter", "otter river", "beaver"):
            ok(await client.call_tool("memory_remember", {"content": word}))
        searched = await client.call_tool("memory_search", {"query": "otter", "scope": "global"})
        recalled = await client.call_tool("memory_recall", {"query": "otter", "scope": "global"})
    s, r = ok(searched), ok(recalled)
    assert {**s, "took_ms": 0} == {**r, "took_ms": 0}
    assert text(searched) == text(recalled)


async def test_recall_with_an_unknown_session_is_not_found(live: LiveServer) -> None:
    # Session mode itself is covered in tests/integration/sessions/test_mcp_session_recall.py.
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Recall"}))
        err = error(await client.call_tool("memory_recall", {"query": "otter", "session_id": "ses_1"}))
    assert err["code"] == "not_found"
    assert "ses_1" in err["message"]


async def test_brain_by_id_slug_default_and_first(tmp_path: Path) -> None:
    # JBMCP_DEFAULT_BRAIN names the default; without `brain` the call lands there, not in the first brain.
    for live in start_server(tmp_path, JBMCP_DEFAULT_BRAIN="second"):
        async with Client(live.url) as client:
            first = ok(await client.call_tool("memory_create_brain", {"name": "First", "slug": "first"}))
            second = ok(await client.call_tool("memory_create_brain", {"name": "Second", "slug": "second"}))
            default = ok(await client.call_tool("memory_remember", {"content": "by default"}))
            by_id = ok(await client.call_tool("memory_remember", {"content": "by id", "brain": first["id"]}))
            by_slug = ok(await client.call_tool("memory_remember", {"content": "by slug", "brain": "first"}))
    assert default["brain_id"] == second["id"]
    assert by_id["brain_id"] == by_slug["brain_id"] == first["id"]


async def test_without_a_default_the_first_brain_is_used(live: LiveServer) -> None:
    async with Client(live.url) as client:
        first = ok(await client.call_tool("memory_create_brain", {"name": "First"}))
        ok(await client.call_tool("memory_create_brain", {"name": "Second"}))
        record = ok(await client.call_tool("memory_remember", {"content": "where do I land"}))
    assert record["brain_id"] == first["id"]
