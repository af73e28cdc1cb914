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
    ("memory_create_brain", {"name": "   "}, V),
    ("memory_create_brain", {"name": "Taken", "slug": "seeded"}, "conflict"),
    ("memory_ingest_file", {"path": ""}, V),
    ("memory_remember", {"content": "x", "path": "memory/global/be\x07ll.md"}, V),
    ("memory_remember", {"content": "x", "path": "memory/global/a\x1fb.md"}, V),
    ("memory_remember", {"content": "x", "path": "memory/global/invoice\u202egnp.exe"}, V),
    ("memory_remember", {"content": "x", "path": "memory/global/\u2066x\u2069.md"}, V),
    ("memory_remember", {"content": "x", "path": "memory/global/" + "é" * 1000}, V),
    ("memory_remember", {"content": "x", "title": "red \x1b[31m title"}, V),
    ("memory_remember", {"content": "x", "title": "two\nlines"}, V),
    ("memory_remember", {"content": "x", "tags": ["ok", "nul\x00tag"]}, V),
    ("memory_remember", {"content": "x", "tags": ["line\nbreak"]}, V),
]


BRAIN_SCOPED: list[tuple[str, dict[str, Any]]] = [
    ("memory_search", {"query": "q"}),
    ("memory_recall", {"query": "q"}),
    ("memory_remember", {"content": "x"}),
    ("memory_ingest_file", {"path": "note.md"}),
    ("memory_ingest_url", {"url": "https://example.com/"}),
]

# Every tool that takes `brain`: an empty one is a caller's bug, not the default brain.
EMPTY_BRAIN: list[tuple[str, dict[str, Any]]] = [
    *BRAIN_SCOPED,
    ("memory_ask", {"query": "q"}),
    ("memory_extract", {"messages": [{"role": "user", "content": "I like tea"}]}),
    ("memory_reflect", {"session_id": "ses_0000000000000000000000000"}),
    ("memory_consolidate", {}),
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


@pytest.mark.parametrize(("tool", "args"), EMPTY_BRAIN)
async def test_an_empty_brain_is_refused_not_the_default(
    seeded: LiveServer, tool: str, args: dict[str, Any]
) -> None:
    err = await _refused(seeded, tool, {**args, "brain": ""})
    assert err["code"] == V and "brain must not be empty" in err["message"], err


@pytest.mark.parametrize("field", ["session_id", "path"])
async def test_errors_quote_only_a_short_excerpt_of_huge_input(seeded: LiveServer, field: str) -> None:
    huge = "s" * 6_000_000
    args = {"query": "q", "session_id": huge} if field == "session_id" else {"content": "x", "path": huge}
    tool = "memory_recall" if field == "session_id" else "memory_remember"
    err = await _refused(seeded, tool, args)
    assert len(err["message"]) < 300, len(err["message"])


async def test_storage_internals_never_reach_the_caller(seeded: LiveServer) -> None:
    err = await _refused(seeded, "memory_remember", {"content": "x", "path": "memory/" + "é" * 1000})
    assert err["code"] == V and "sk" not in err["message"].split() and "bytes" in err["message"], err
