"""Every tool of every surface, called through the official MCP client with arguments drawn from its
own input schema (tests/support/schema_args.py): those the schema accepts, and those with one value
of any JSON kind in place. Whatever the arguments, a call answers in the surface's style (a result
or a tool error naming what was wrong): no tool crashes (`internal_error`, logged as a crash), no
JSON-RPC internal error, and the server still serves afterwards. On both shapes (SQLite and files;
DynamoDB and S3 under moto with the fake OpenSearch cluster), the fake embedder, the brain seeded
through the surfaces so that ids and names resolve.

CAIRN_FUZZ_EXAMPLES sets the examples per tool (default 15) for a longer hunt."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult, TextContent, Tool

from cairn.auth import access
from cairn.auth.authenticate import OPEN
from cairn.bootstrap import Container
from cairn.entrypoints.mcp.registry import SURFACES, build_server
from cairn.services.ingest.inputs import LocalFilePolicy
from tests.support.fuzzing import EXAMPLES, ErrorLog, errors_logged, fixed
from tests.support.schema_args import mangled, valid
from tests.support.shapes import SHAPES, adapters_for, process


@dataclass
class World:
    container: Container
    files: LocalFilePolicy
    words: tuple[str, ...]
    """Names and ids the seeding made, tried wherever a string goes."""


@asynccontextmanager
async def connected(world: World, surface: str) -> AsyncIterator[Client]:
    with access.acting_as(OPEN):  # the loopback owner, as `cairn serve` without a credential
        async with Client(build_server(surface, world.container, world.files)) as client:
            yield client


@pytest.fixture(params=SHAPES)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        yield seeded(process(adapters, tmp_path), tmp_path)


def seeded(container: Container, tmp: Path) -> World:
    (tmp / "ingest").mkdir()
    (tmp / "ingest" / "note.md").write_text("# Note\n\nThe staging database keeps backups for 14 days.\n")
    world = World(container, LocalFilePolicy(root=tmp / "ingest", max_bytes=100_000), ())
    brain = container.brains.create("Notes", slug="notes")
    seeds = {
        "canonical": [("memory_remember", {"content": "Backups of the staging database are kept 14 days."})],
        "zengram": [
            ("brain_store", {"type": "fact", "content": "Ada leads the payments team.", "key": "lead"})
        ],
        "gbrain": [("brain_put", {"slug": "people/ada", "content": "# Ada\n\nAda leads payments."})],
        "thoughtmcp": [
            ("remember", {"content": "Ada prefers written updates.", "userId": "u1", "sessionId": "s1"})
        ],
    }
    ids: list[str] = []
    with start_blocking_portal() as portal:
        for surface, calls in seeds.items():
            with portal.wrap_async_context_manager(connected(world, surface)) as client:
                for name, args in calls:
                    result = portal.call(client.call_tool, name, args)
                    assert not result.is_error, (name, result.content)
                    ids += _ids(_payload(result))
    world.words = ("notes", brain.id, "people/ada", "u1", "s1", "lead", *ids)
    return world


def _payload(result: CallToolResult) -> Any:
    """What a result carries: its structured content, or the JSON of its text (the surfaces that
    answer in text, as the systems they reimplement do)."""
    if result.structured_content is not None:
        return result.structured_content
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    try:
        return json.loads(texts[0]) if texts else None
    except ValueError:
        return None


def _ids(value: Any) -> list[str]:
    """The ids a result names (under keys such as `id`, `memoryId`, `doc_id`)."""
    if isinstance(value, dict):
        named = [v for k, v in value.items() if k.lower().endswith("id") and isinstance(v, str)]
        return named + [i for v in value.values() for i in _ids(v)]
    if isinstance(value, list):
        return [i for v in value for i in _ids(v)]
    return []


def _arguments(tool: Tool, words: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    schema = tool.input_schema
    return valid(schema, words) | mangled(schema, words)


def _fuzz(portal: BlockingPortal, client: Client, tools: list[Tool], world: World, crashes: ErrorLog) -> None:
    @fixed(EXAMPLES * len(tools))
    @given(st.data())
    def call(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(tools), label="tool")
        args = data.draw(_arguments(tool, world.words), label="arguments")
        crashes.seen.clear()
        try:
            portal.call(client.call_tool, tool.name, args)
        except MCPError as exc:  # a JSON-RPC error: fine when it says the request was wrong
            assert exc.error.code != INTERNAL_ERROR, f"{tool.name}: {exc}"
        assert not crashes.seen, f"{tool.name} crashed: {crashes.seen}"

    call()


@pytest.fixture
def crashes() -> Iterator[ErrorLog]:
    with errors_logged() as log:
        yield log


@pytest.mark.parametrize("surface", list(SURFACES))
def test_no_arguments_crash_a_tool(surface: str, world: World, crashes: ErrorLog) -> None:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(connected(world, surface)) as client,
    ):
        tools = portal.call(client.list_tools).tools
        assert tools
        _fuzz(portal, client, tools, world, crashes)
        assert len(portal.call(client.list_tools).tools) == len(tools)  # still serving


@pytest.mark.parametrize("world", ["embedded"], indirect=True)
def test_a_tool_that_crashes_is_caught(
    world: World, crashes: ErrorLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("cairn.services.search.service.SearchService.search", crash)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(connected(world, "canonical")) as client,
    ):
        tools = [t for t in portal.call(client.list_tools).tools if t.name == "memory_search"]
        with pytest.raises(AssertionError, match="memory_search crashed"):
            _fuzz(portal, client, tools, world, crashes)
