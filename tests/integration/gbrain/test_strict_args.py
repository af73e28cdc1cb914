"""Arguments are taken at their JSON type, as gbrain's typed parameters are: a number or boolean
sent as a string (or of another JSON type) is invalid params (-32602) and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.gbrain.conftest import body, gbrain, refused, text
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio

LAX = [
    ("brain_search", {"query": "anvils", "limit": "3"}),
    ("brain_query", {"query": "anvils", "limit": 3.0}),
    ("brain_list", {"limit": True}),
    ("brain_gaps", {"resolved": "yes"}),
    ("brain_gaps", {"resolved": "true"}),
    ("brain_gaps", {"resolved": 1}),
    ("brain_graph", {"slug": "a", "depth": "2"}),
    ("brain_timeline", {"slug": "a", "limit": 2**32}),  # beyond u32
    ("brain_backlinks", {"slug": "a", "limit": "5"}),
    ("brain_link_close", {"link_id": "1", "valid_until": "2020-01"}),
    ("brain_put", {"slug": "a", "content": "A2", "expected_version": "1"}),
    ("brain_raw", {"slug": "a", "source": "crm", "data": {}, "overwrite": "false"}),
    ("brain_get", {"slug": 7}),
    ("brain_tags", {"slug": "a", "add": [1]}),
    ("brain_tags", {"slug": "a", "add": '["x"]'}),  # a list sent as a JSON-encoded string
    ("brain_raw", {"slug": "a", "source": "crm", "data": '{"k": 1}'}),  # an object, likewise
]


@pytest.mark.parametrize(("tool", "args"), LAX, ids=[f"{t}-{i}" for i, (t, _) in enumerate(LAX)])
async def test_a_value_of_another_json_type_is_invalid_params(
    live: LiveServer, tool: str, args: dict[str, Any]
) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "A"}))
        text(await g.call_tool("brain_put", {"slug": "b", "content": "B"}))
        text(await g.call_tool("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "k"}))
        before = live.snapshot(), body(await g.call_tool("brain_stats", {}))
        error = await refused(g, tool, args)
        after = live.snapshot(), body(await g.call_tool("brain_stats", {}))

    assert error.code == -32602, error.message
    assert after == before


async def test_values_of_the_right_type_are_taken(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "Anvils.", "expected_version": None}))
        found = body(await g.call_tool("brain_search", {"query": "anvils", "limit": 3}))
        gaps = body(await g.call_tool("brain_gaps", {"resolved": True, "limit": 0}))
        timeline = body(await g.call_tool("brain_timeline", {"slug": "a", "limit": 2**32 - 1}))

    assert [h["slug"] for h in found] == ["default::a"]
    assert gaps == [] and timeline == {"slug": "default::a", "entries": []}


NULLS = [
    ("brain_search", {"query": "anvils", "limit": None}),
    ("brain_query", {"query": "anvils", "limit": None, "depth": None, "collection": None}),
    ("brain_list", {"limit": None, "wing": None}),
    ("brain_gaps", {"resolved": None, "limit": None}),
    ("brain_graph", {"slug": "a", "depth": None, "temporal": None}),
    ("brain_timeline", {"slug": "a", "limit": None}),
    ("brain_raw", {"slug": "a", "source": "crm", "data": {"k": 1}, "overwrite": None}),
]


@pytest.mark.parametrize(("tool", "args"), NULLS, ids=[t for t, _ in NULLS])
async def test_null_for_an_optional_argument_is_the_argument_omitted(
    live: LiveServer, tool: str, args: dict[str, Any]
) -> None:
    omitted = {k: v for k, v in args.items() if v is not None}
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "Anvils are heavy."}))
        with_null = await g.call_tool(tool, args)
        if tool == "brain_raw":  # the same write twice is a duplicate: compare with a fresh source
            omitted["source"] = "crm2"
        without = await g.call_tool(tool, omitted)

    assert body(with_null) == body(without) if tool != "brain_raw" else text(with_null) and text(without)


async def test_null_for_a_required_argument_is_still_invalid_params(live: LiveServer) -> None:
    async with gbrain(live) as g:
        error = await refused(g, "brain_search", {"query": None})

    assert error.code == -32602
