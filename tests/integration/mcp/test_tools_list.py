"""tools/list over real HTTP advertises the seed's names and input schemas exactly,
to clients of both protocol generations."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio

STRING = {"type": "string"}
QUERY = {"type": "string", "minLength": 1, "maxLength": 4096}

# Property schemas without their human descriptions, and the required list, per tool.
SCHEMAS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "memory_search": (
        {
            "query": QUERY,
            "brain": STRING,
            "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            "scope": {"type": "string", "enum": ["all", "global", "project", "agent"]},
            "sort": {"type": "string", "enum": ["relevance", "recency", "relevance_then_recency"]},
        },
        ["query"],
    ),
    "memory_recall": (
        {
            "query": QUERY,
            "brain": STRING,
            "scope": {"type": "string", "enum": ["global", "project", "agent"]},
            "session_id": STRING,
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        ["query"],
    ),
    "memory_remember": (
        {
            "content": {"type": "string", "minLength": 1, "maxLength": 5_000_000},
            "title": {"type": "string", "minLength": 1, "maxLength": 512},
            "brain": STRING,
            "tags": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 64},
                "maxItems": 64,
            },
            "path": {"type": "string", "minLength": 1, "maxLength": 1024},
        },
        ["content"],
    ),
    "memory_ingest_file": (
        {
            "path": STRING,
            "brain": STRING,
            # The Jeffs schema's four kinds plus html, which the server extracts too (a superset:
            # every call a Jeffs client makes is still valid).
            "as": {"type": "string", "enum": ["markdown", "text", "pdf", "json", "html"]},
        },
        ["path"],
    ),
    "memory_ingest_url": ({"url": {"type": "string", "format": "uri"}, "brain": STRING}, ["url"]),
    "memory_create_brain": (
        {
            "name": {"type": "string", "minLength": 1, "maxLength": 128},
            "slug": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9][a-z0-9-]*$"},
            "visibility": {"type": "string", "enum": ["private", "tenant", "public"], "default": "private"},
        },
        ["name"],
    ),
    "memory_list_brains": ({}, []),
    "memory_ask": (
        {
            "query": {"type": "string", "minLength": 1, "maxLength": 8192},
            "brain": STRING,
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        ["query"],
    ),
    "memory_extract": (
        {
            "messages": {
                "type": "array",
                "minItems": 1,
                "maxItems": 500,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "role": {"type": "string", "enum": ["system", "user", "assistant", "tool"]},
                        "content": {"type": "string", "minLength": 1, "maxLength": 1_000_000},
                    },
                    "required": ["role", "content"],
                },
            },
            "brain": STRING,
            "actor_id": {"type": "string", "minLength": 1, "maxLength": 256},
            "session_id": {"type": "string", "minLength": 1, "maxLength": 128},
        },
        ["messages"],
    ),
    "memory_reflect": (
        {"session_id": {"type": "string", "minLength": 1, "maxLength": 128}, "brain": STRING},
        ["session_id"],
    ),
    "memory_consolidate": ({"brain": STRING}, []),
}


def _bare(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k != "description"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_lists_the_seeds_eleven_tools(live: LiveServer, mode: str) -> None:
    # what each description must say: test_canonical_descriptions.py
    async with Client(live.url, mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert sorted(t.name for t in tools) == sorted(SCHEMAS)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_input_schemas_are_the_seeds_exactly(live: LiveServer, mode: str) -> None:
    async with Client(live.url, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, (props, required) in SCHEMAS.items():
        schema = tools[name].input_schema
        assert schema["type"] == "object", name
        assert {k: _bare(v) for k, v in schema["properties"].items()} == props, name
        assert schema.get("required", []) == required, name
        assert "title" not in schema, name


async def test_every_tool_advertises_an_output_schema_and_described_parameters(live: LiveServer) -> None:
    async with Client(live.url) as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        for pname, prop in tool.input_schema["properties"].items():
            assert pname == "visibility" or prop.get("description"), (tool.name, pname)
    search_out = next(t for t in tools if t.name == "memory_search").output_schema
    assert search_out is not None
    assert set(search_out["required"]) == {"query", "brain_id", "hits", "took_ms"}


async def test_both_protocol_generations_negotiate(live: LiveServer) -> None:
    async with Client(live.url, mode="legacy") as old:
        assert old.protocol_version == "2025-11-25"
    async with Client(live.url) as new:
        assert new.protocol_version == "2026-07-28"
    async with Client(live.url, mode="2026-07-28") as pinned:
        assert len((await pinned.list_tools()).tools) == len(SCHEMAS)
