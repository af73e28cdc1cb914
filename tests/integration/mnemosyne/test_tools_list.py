"""tools/list is seed 003's: six tools, their parameters, types, defaults and required fields, plus
the `workspace_id` every tool but get_health takes; initialize names the tools and library types."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.services.mnemosyne.libraries import LIBRARY_TYPES
from tests.integration.mcp.conftest import LiveServer
from tests.integration.mnemosyne.conftest import mnemosyne

pytestmark = pytest.mark.anyio

NULL_STR = [{"type": "string"}, {"type": "null"}]
SEED: dict[str, dict[str, Any]] = {
    "search": {
        "required": ["query"],
        "properties": {
            "query": ("string", None),
            "library_uid": (NULL_STR, None),
            "library_type": (NULL_STR, None),
            "collection_uid": (NULL_STR, None),
            "limit": ("integer", 20),
            "rerank": ("boolean", True),
            "include_images": ("boolean", True),
            "search_types": (
                [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                ["vector", "fulltext", "graph"],
            ),
        },
    },
    "get_chunk": {"required": ["chunk_uid"], "properties": {"chunk_uid": ("string", None)}},
    "list_libraries": {"required": [], "properties": {"limit": ("integer", 50), "offset": ("integer", 0)}},
    "list_collections": {
        "required": [],
        "properties": {"library_uid": (NULL_STR, None), "limit": ("integer", 50), "offset": ("integer", 0)},
    },
    "list_items": {
        "required": [],
        "properties": {
            "collection_uid": (NULL_STR, None),
            "library_uid": (NULL_STR, None),
            "limit": ("integer", 50),
            "offset": ("integer", 0),
        },
    },
    "get_health": {"required": [], "properties": {}},
}


async def test_tools_list_matches_the_seed_and_needs_no_credential(live: LiveServer) -> None:
    async with mnemosyne(live, credential=None) as client:  # initialize and tools/list need none
        listed = (await client.list_tools()).tools
        instructions = client.instructions
        name = client.server_info.name if client.server_info else None

    assert sorted(t.name for t in listed) == sorted(SEED)
    for tool in listed:
        seed = SEED[tool.name]
        schema = tool.input_schema
        props = dict(schema.get("properties", {}))
        workspace = props.pop("workspace_id", None)
        if tool.name == "get_health":
            assert workspace is None
        else:  # advertised, undocumented (a host injects it)
            assert workspace is not None and "description" not in workspace, tool.name
        assert sorted(schema.get("required", [])) == sorted(seed["required"]), tool.name
        assert sorted(props) == sorted(seed["properties"]), tool.name
        for prop, (kind, default) in seed["properties"].items():
            shape = props[prop]
            if isinstance(kind, list):
                assert shape.get("anyOf") == kind, (tool.name, prop)
            else:
                assert shape.get("type") == kind, (tool.name, prop)
            assert shape.get("default") == default, (tool.name, prop)
        assert tool.description

    assert name == "mnemosyne"
    assert instructions is not None
    assert all(t in instructions for t in SEED) and all(t in instructions for t in LIBRARY_TYPES)


async def test_both_paths_serve_it(live: LiveServer) -> None:
    for path in ("/mcp/mnemosyne", "/mcp/mnemosyne/"):
        async with mnemosyne(live, path=path) as client:
            assert len((await client.list_tools()).tools) == 6


ANSWERS = {
    "search": (
        "candidates",
        "text_preview",
        "total_candidates",
        "reranker_used",
        "search_types_used",
        "60 + r",
    ),
    "get_chunk": ("chunk_index", "text"),
    "list_libraries": ("library_type", "description"),
    "list_collections": ("library_uid", "library_name"),
    "list_items": ("embedding_status", "chunk_count", "image_count"),
    "get_health": ("ok|degraded|error", "duration_ms"),
}


async def test_descriptions_carry_the_seeds_parameters_defaults_and_answers(live: LiveServer) -> None:
    async with mnemosyne(live) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}

    for name, seed in SEED.items():
        description = tools[name].description or ""
        assert len(description) >= 150, name
        assert [p for p in seed["properties"] if f"`{p}`" not in description] == [], name
        for prop, (_, default) in seed["properties"].items():
            if isinstance(default, list):  # search_types: "default all three: vector, fulltext, graph"
                assert f"default all three: {', '.join(default)}" in description, (name, prop)
            elif default is not None:
                said = str(default).lower()
                assert f"default {said}" in description or f"defaults to {said}" in description, (name, prop)
        assert all(word in description for word in ANSWERS[name]), name
    assert "library_type" in (tools["list_libraries"].description or "")
    assert all(t in (tools["list_libraries"].description or "") for t in LIBRARY_TYPES)
