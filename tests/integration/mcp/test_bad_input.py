"""Bad input to every tool: a tool error in the canonical style ({code, message}), and nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, error, ok, start_server

pytestmark = pytest.mark.anyio

V = "validation_error"

SCHEMA_VIOLATIONS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_search", {}, "query"),
    ("memory_search", {"query": ""}, "query"),
    ("memory_search", {"query": "q" * 4097}, "query"),
    ("memory_search", {"query": "q", "top_k": 0}, "top_k"),
    ("memory_search", {"query": "q", "top_k": 101}, "top_k"),
    ("memory_search", {"query": "q", "top_k": 2.5}, "top_k"),
    ("memory_search", {"query": "q", "scope": "everywhere"}, "scope"),
    ("memory_search", {"query": "q", "sort": "oldest"}, "sort"),
    ("memory_recall", {"query": ""}, "query"),
    ("memory_recall", {"query": "q" * 4097}, "query"),
    ("memory_recall", {"query": "q", "top_k": 0}, "top_k"),
    ("memory_recall", {"query": "q", "top_k": 51}, "top_k"),
    ("memory_recall", {"query": "q", "scope": "all"}, "scope"),
    ("memory_remember", {}, "content"),
    ("memory_remember", {"content": ""}, "content"),
    ("memory_remember", {"content": "x", "title": ""}, "title"),
    ("memory_remember", {"content": "x", "title": "t" * 513}, "title"),
    ("memory_remember", {"content": "x", "tags": ["a"] * 65}, "tags"),
    ("memory_remember", {"content": "x", "tags": ["t" * 65]}, "tags"),
    ("memory_remember", {"content": "x", "tags": [""]}, "tags"),
    ("memory_remember", {"content": "x", "path": ""}, "path"),
    ("memory_remember", {"content": "x", "path": "p" * 1025}, "path"),
    ("memory_ingest_file", {}, "path"),
    ("memory_ingest_file", {"path": "a.md", "as": "docx"}, "as"),
    ("memory_ingest_url", {}, "url"),
    ("memory_ingest_url", {"url": "not a url"}, "url"),
    ("memory_create_brain", {}, "name"),
    ("memory_create_brain", {"name": ""}, "name"),
    ("memory_create_brain", {"name": "n" * 129}, "name"),
    ("memory_create_brain", {"name": "x", "slug": ""}, "slug"),
    ("memory_create_brain", {"name": "x", "slug": "Bad_Slug"}, "slug"),
    ("memory_create_brain", {"name": "x", "slug": "-leading-dash"}, "slug"),
    ("memory_create_brain", {"name": "x", "slug": "s" * 65}, "slug"),
    ("memory_create_brain", {"name": "x", "visibility": "secret"}, "visibility"),
]

# Arguments the schema accepts but the core refuses.
CORE_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_remember", {"content": "x", "path": "memory/../../etc/passwd"}, V),
    ("memory_remember", {"content": "x", "path": "memory/global/"}, V),
    ("memory_remember", {"content": "x", "tags": ["a,b"]}, V),
    ("memory_create_brain", {"name": "   "}, V),
    ("memory_create_brain", {"name": "Taken", "slug": "seeded"}, "conflict"),
    ("memory_ingest_file", {"path": ""}, V),
]

BRAIN_SCOPED: list[tuple[str, dict[str, Any]]] = [
    ("memory_search", {"query": "q"}),
    ("memory_recall", {"query": "q"}),
    ("memory_remember", {"content": "x"}),
    ("memory_ingest_file", {"path": "note.md"}),
    ("memory_ingest_url", {"url": "https://example.com/"}),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    for live in start_server(tmp_path_factory.mktemp("bad-input")):
        brain = live.container.brains.create("Seeded", slug="seeded")
        live.container.ingest.remember(brain, "an existing note", path="memory/global/existing.md")
        (live.ingest_root / "note.md").write_text("# Note\n\nbody\n")
        yield live


async def _refused(live: LiveServer, tool: str, args: dict[str, Any]) -> dict[str, str]:
    before = live.snapshot()
    async with Client(live.url) as client:
        err = error(await client.call_tool(tool, args))
    assert live.snapshot() == before
    return err


@pytest.mark.parametrize(("tool", "args", "field"), SCHEMA_VIOLATIONS)
async def test_schema_violations_are_validation_errors(
    seeded: LiveServer, tool: str, args: dict[str, Any], field: str
) -> None:
    err = await _refused(seeded, tool, args)
    assert err["code"] == V
    assert err["message"].startswith(f"{field}") or f"{field}:" in err["message"], err


@pytest.mark.parametrize(("tool", "args", "code"), CORE_REFUSALS)
async def test_core_refusals_keep_their_codes(
    seeded: LiveServer, tool: str, args: dict[str, Any], code: str
) -> None:
    assert (await _refused(seeded, tool, args))["code"] == code


@pytest.mark.parametrize(("tool", "args"), BRAIN_SCOPED)
async def test_an_unknown_brain_is_no_brain(seeded: LiveServer, tool: str, args: dict[str, Any]) -> None:
    err = await _refused(seeded, tool, {**args, "brain": "no-such-brain"})
    assert err["code"] == "no_brain"
    assert "no-such-brain" in err["message"]


@pytest.mark.parametrize(("tool", "args"), BRAIN_SCOPED)
async def test_no_brain_at_all_is_no_brain(live: LiveServer, tool: str, args: dict[str, Any]) -> None:
    (live.ingest_root / "note.md").write_text("body")
    assert (await _refused(live, tool, args))["code"] == "no_brain"
    assert live.container.brains.list() == []


async def test_an_unknown_tool_is_a_tool_error(seeded: LiveServer) -> None:
    assert (await _refused(seeded, "memory_forget", {"id": "x"}))["code"] == "unknown_tool"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_both_protocol_generations_get_the_same_error(seeded: LiveServer, mode: str) -> None:
    async with Client(seeded.url, mode=mode) as client:
        err = error(await client.call_tool("memory_search", {"query": "q", "top_k": 0}))
        fine = ok(await client.call_tool("memory_list_brains", {}))
    assert err == {"code": V, "message": "top_k: Input should be greater than or equal to 1"}
    assert [b["slug"] for b in fine["items"]] == ["seeded"]
