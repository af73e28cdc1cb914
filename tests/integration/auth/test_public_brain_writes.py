"""A public brain is read by any tenant and written by its own only: every tool of every MCP surface
that writes (from the surface registry, through tools/list), called by another tenant's admin key
aimed at the public brain A of the visibility world, leaves A's records and chunks as they were, on
the embedded store and on the AWS adapters. What a read may leave behind in the brain (a gap a
search noticed, an access count) is not a write and is kept out of the comparison."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn.auth.principal import PUBLIC, READ
from cairn.entrypoints.mcp.registry import SURFACES, http_path
from tests.integration.auth.test_visibility_matrix import _answer, _client, _http, _scope, aimed
from tests.support.live_world import Live, live
from tests.support.visibility_world import DataSet

pytestmark = pytest.mark.integration
__all__ = ["live"]

BY_READS = ("gaps#", "access#", "audit", "rate", "stats#")
"""Record partitions a read may touch (gbrain logs a gap a search noticed; reads are counted)."""


def _state(world: Live, data: DataSet) -> dict[tuple[str, str], str]:
    held: dict[tuple[str, str], str] = {}
    for item in world.records():
        text = json.dumps(item.data, sort_keys=True, default=str)
        if data.brain.id in item.pk + item.sk + text and not item.pk.startswith(BY_READS):
            held[(item.pk, item.sk)] = text
    held[("chunks", data.brain.id)] = str(world.container.adapters.chunks.count(data.brain.id))
    return held


SLUGS = ("slug", "from_slug", "to_slug")
FITTING = {"valid_until": "2020-01-01", "valid_from": "2019-01-01", "relationship": "works_at"}


def _aimed(schema: dict[str, Any], data: DataSet) -> list[dict[str, Any]]:
    """The visibility matrix's argument sets, with gbrain's link ends and dates made to fit, and
    each again with its pages named without their collection (found among every readable one)."""
    props = schema.get("properties", {})
    found = []
    for args in aimed(schema, data):
        for name, value in FITTING.items():
            if name in props:
                args[name] = value
        for name in SLUGS[1:]:
            if name in props and data.values.get("slug"):
                args[name] = data.values["slug"]
        found.append(args)
        if any(isinstance(args.get(n), str) and "::" in args[n] for n in SLUGS):
            found.append({k: v.split("::", 1)[1] if k in SLUGS else v for k, v in args.items()})
    return found


@pytest.mark.anyio
async def test_no_write_tool_lets_another_tenant_change_a_public_brain(live: Live) -> None:
    public = live.sets["A"]
    assert public.brain.visibility == "public"
    before = _state(live, public)
    called = 0
    owner_http, stranger_http = _http(live.credentials["owner"]), _http(live.credentials["other_tenant"])
    async with owner_http, stranger_http:
        for surface in SURFACES:
            url = f"{live.base}{http_path(surface)}"
            async with _client(url, owner_http) as owner:
                tools = (await owner.list_tools()).tools
            writes = [t for t in tools if _scope(live, url, t.name) not in (READ, PUBLIC)]
            async with _client(url, stranger_http) as stranger:
                for tool in writes:
                    for args in _aimed(tool.input_schema, public):
                        await _answer(stranger, tool.name, args)
                        called += 1
    after = _state(live, public)
    changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    assert called > 30
    assert not changed, [(k, before.get(k), after.get(k)) for k in changed][:10]
