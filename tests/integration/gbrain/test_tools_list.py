"""tools/list of /mcp/gbrain against seed 002: the 17 tools, each parameter, which are required, and
their JSON types (u32/u64 are integers of at least 0, i64 an integer, string[] an array of strings)."""

from __future__ import annotations

import pytest

from tests.integration.gbrain.conftest import gbrain
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio

Kind = dict[str, object]
STRING: Kind = {"type": "string"}
BOOL: Kind = {"type": "boolean"}
OBJECT: Kind = {"type": "object"}
U32: Kind = {"type": "integer", "minimum": 0}
U64 = U32
I64: Kind = {"type": "integer"}
STRINGS: Kind = {"type": "array", "items": {"type": "string"}}

# tool -> {parameter: (type, required)}
SEED: dict[str, dict[str, tuple[Kind, bool]]] = {
    "brain_get": {"slug": (STRING, True)},
    "brain_put": {"slug": (STRING, True), "content": (STRING, True), "expected_version": (I64, False)},
    "brain_query": {
        "query": (STRING, True),
        "collection": (STRING, False),
        "wing": (STRING, False),
        "limit": (U32, False),
        "depth": (STRING, False),
    },
    "brain_search": {
        "query": (STRING, True),
        "collection": (STRING, False),
        "wing": (STRING, False),
        "limit": (U32, False),
    },
    "brain_list": {
        "collection": (STRING, False),
        "wing": (STRING, False),
        "page_type": (STRING, False),
        "limit": (U32, False),
    },
    "brain_link": {
        "from_slug": (STRING, True),
        "to_slug": (STRING, True),
        "relationship": (STRING, True),
        "valid_from": (STRING, False),
        "valid_until": (STRING, False),
    },
    "brain_link_close": {"link_id": (U64, True), "valid_until": (STRING, True)},
    "brain_backlinks": {"slug": (STRING, True), "limit": (U32, False), "temporal": (STRING, False)},
    "brain_graph": {"slug": (STRING, True), "depth": (U32, False), "temporal": (STRING, False)},
    "brain_check": {"slug": (STRING, False)},
    "brain_timeline": {"slug": (STRING, True), "limit": (U32, False)},
    "brain_tags": {"slug": (STRING, True), "add": (STRINGS, False), "remove": (STRINGS, False)},
    "brain_gap": {"query": (STRING, True), "slug": (STRING, False), "context": (STRING, False)},
    "brain_gaps": {"resolved": (BOOL, False), "limit": (U32, False)},
    "brain_stats": {},
    "brain_collections": {},
    "brain_raw": {
        "slug": (STRING, True),
        "source": (STRING, True),
        "data": (OBJECT, True),
        "overwrite": (BOOL, False),
    },
}
DEFAULTS = {
    ("brain_search", "limit"): 10,  # the seed's (the real server's is 50)
    ("brain_query", "limit"): 10,
    ("brain_list", "limit"): 50,
    ("brain_graph", "depth"): 2,  # the seed's (the real server's is 1)
    ("brain_timeline", "limit"): 20,
    ("brain_gaps", "limit"): 20,
    ("brain_gaps", "resolved"): False,
    ("brain_raw", "overwrite"): False,
}


async def test_tools_list_is_the_seeds_seventeen_tools(live: LiveServer) -> None:
    async with gbrain(live) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}

    assert sorted(tools) == sorted(SEED) and len(tools) == 17
    for name, params in SEED.items():
        schema = tools[name].input_schema
        assert schema["type"] == "object", name
        assert set(schema.get("properties", {})) == set(params), name
        assert set(schema.get("required", [])) == {p for p, (_, required) in params.items() if required}, name
        for param, (kind, _) in params.items():
            prop = schema["properties"][param]
            assert {k: prop.get(k) for k in kind} == kind, (name, param, prop)
            assert prop.get("description"), (name, param)
            if kind["type"] == "integer" and "minimum" not in kind:
                assert "minimum" not in prop, (name, param)  # i64: negative values are the caller's
        assert tools[name].description, name
    for (name, param), default in DEFAULTS.items():
        assert tools[name].input_schema["properties"][param]["default"] == default, (name, param)


FORMULAS = {
    "brain_query": ("0.4", "0.6", "1.0", "10 best", "0.3", "3 hops", "4000", "/ 4"),
    "brain_search": ("BM25", "not normalised"),
    "brain_graph": ("10", "1000"),
    "brain_gap": ("SHA-256", "500"),
    "brain_gaps": ("1000",),
    "brain_raw": ("JSON object", "1 MiB"),
    "brain_put": ("-32009", "current_version", "1 MiB"),
    "brain_check": ("is the CEO of",),
}


async def test_descriptions_carry_the_seeds_parameters_defaults_and_formulas(live: LiveServer) -> None:
    async with gbrain(live) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions

    for name, params in SEED.items():
        description = tools[name].description or ""
        assert len(description) >= 150, name
        missing = [p for p in params if f"`{p}`" not in description]
        assert missing == [], (name, missing)
        for needle in FORMULAS.get(name, ()):
            assert needle in description, (name, needle)
    for (name, param), default in DEFAULTS.items():
        said, description = str(default).lower(), tools[name].description or ""
        assert f"default {said}" in description or f"defaults to {said}" in description, (name, param)
    assert instructions is not None and "gbrain" in instructions
    assert all(tool in instructions for tool in ("brain_get", "brain_put", "brain_query", "brain_search"))
