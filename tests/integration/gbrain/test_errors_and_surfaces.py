"""gbrain's error table in one place (every failure a JSON-RPC error, never isError), refused input
changing nothing, and one brain seen through gbrain, REST and the canonical surface."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import Client

from tests.integration.gbrain.conftest import body, gbrain, page, refused, text
from tests.integration.mcp.conftest import LiveServer, ok

pytestmark = pytest.mark.anyio


async def test_every_error_code_of_gbrains_table(live: LiveServer) -> None:
    c = live.container
    c.brains.create("Work", slug="work")
    c.brains.create("Home", slug="home")
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "work::x", "content": "X"}))
        text(await g.call_tool("brain_put", {"slug": "home::x", "content": "X"}))
        text(await g.call_tool("brain_raw", {"slug": "work::x", "source": "s", "data": {}}))
        cases: dict[str, Any] = {
            "unknown tool": await refused(g, "brain_nothing", {}),
            "missing argument": await refused(g, "brain_get", {}),
            "wrong type": await refused(g, "brain_list", {"limit": "many"}),
            "negative u32": await refused(g, "brain_timeline", {"slug": "work::x", "limit": -1}),
            "array of strings": await refused(g, "brain_tags", {"slug": "work::x", "add": "t"}),
            "invalid slug": await refused(g, "brain_get", {"slug": "X"}),
            "page not found": await refused(g, "brain_get", {"slug": "work::y"}),
            "link not found": await refused(g, "brain_link_close", {"link_id": 7, "valid_until": "2020-01"}),
            "collection not found": await refused(g, "brain_list", {"collection": "nope"}),
            "ambiguous": await refused(g, "brain_get", {"slug": "x"}),
            "occ": await refused(g, "brain_put", {"slug": "work::x", "content": "Y"}),
            "raw duplicate": await refused(g, "brain_raw", {"slug": "work::x", "source": "s", "data": {}}),
        }
        c.pages.set_state(c.brains.get("home"), state="restoring")
        cases["restoring"] = await refused(
            g, "brain_put", {"slug": "home::x", "content": "Z", "expected_version": 1}
        )
        c.pages.set_state(c.brains.get("work"), writable=False)
        cases["read-only"] = await refused(
            g, "brain_put", {"slug": "work::x", "content": "Z", "expected_version": 1}
        )

    codes = {name: error.code for name, error in cases.items()}
    assert codes == {
        "unknown tool": -32602,
        "missing argument": -32602,
        "wrong type": -32602,
        "negative u32": -32602,
        "array of strings": -32602,
        "invalid slug": -32602,
        "page not found": -32001,
        "link not found": -32001,
        "collection not found": -32001,
        "ambiguous": -32002,
        "occ": -32009,
        "raw duplicate": -32003,
        "restoring": -32002,
        "read-only": -32003,
    }
    assert cases["unknown tool"].message == "unknown tool: brain_nothing"
    # work, the oldest brain, is the default collection: gbrain names it `default`
    assert cases["ambiguous"].data == {"code": "ambiguous_slug", "candidates": ["default::x", "home::x"]}
    assert cases["occ"].data == {"current_version": 1}


async def test_refused_input_changes_nothing(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "A"}))
        text(await g.call_tool("brain_put", {"slug": "b", "content": "B"}))
        text(await g.call_tool("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "k"}))
        before = (
            live.snapshot(),
            body(await g.call_tool("brain_stats", {})),
            text(await g.call_tool("brain_get", {"slug": "a"})),
        )
        for tool, args in (
            ("brain_put", {"slug": "a", "content": "changed"}),
            ("brain_put", {"slug": "a", "content": "changed", "expected_version": 9}),
            ("brain_put", {"slug": "c/", "content": "new"}),
            ("brain_put", {"slug": "c", "content": 5}),
            ("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "k", "valid_from": "2024-1-1"}),
            ("brain_link", {"from_slug": "a", "to_slug": "zz", "relationship": "k"}),
            ("brain_link_close", {"link_id": 1, "valid_until": "soon"}),
            ("brain_tags", {"slug": "a", "add": ["ok", "NOT OK"]}),
            ("brain_tags", {"slug": "a", "add": [f"t{i}" for i in range(101)]}),
            ("brain_gap", {"query": "q", "context": "c" * 501}),
            ("brain_gap", {"query": "q", "slug": "zz"}),
            ("brain_raw", {"slug": "a", "source": "s", "data": ["not", "an", "object"]}),
            ("brain_raw", {"slug": "zz", "source": "s", "data": {}}),
        ):
            await refused(g, tool, args)
        after = (
            live.snapshot(),
            body(await g.call_tool("brain_stats", {})),
            text(await g.call_tool("brain_get", {"slug": "a"})),
        )
        links = body(await g.call_tool("brain_backlinks", {"slug": "b", "temporal": "all"}))
        tags = body(await g.call_tool("brain_tags", {"slug": "a"}))

    assert after == before and tags == [] and [x["valid_until"] for x in links] == [None]
    brain = live.container.brains.get("default")
    assert live.container.raw_data.sources(brain, live.container.pages.get("a").document.id) == []


async def test_one_brain_through_gbrain_rest_and_canonical(live: LiveServer) -> None:
    content = page("Boiler", "The boiler is serviced every June.", type="concept")
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "house/boiler", "content": content}))
    read = httpx.get(f"{live.base}/v1/brains/default/documents/read", params={"path": "house/boiler"})
    written = httpx.put(
        f"{live.base}/v1/brains/default/documents",
        params={"path": "house/kettle"},
        content=b"---\ntitle: Kettle\ntype: appliance\n---\nThe kettle descales on Fridays.\n",
        headers={"content-type": "application/octet-stream"},
    )
    async with Client(live.url) as canonical, gbrain(live) as g:
        hits = ok(
            await canonical.call_tool("memory_search", {"brain": "default", "query": "boiler serviced"})
        )
        kettle = text(await g.call_tool("brain_get", {"slug": "house/kettle"}))
        listed = body(await g.call_tool("brain_list", {"page_type": "appliance"}))
        found = body(await g.call_tool("brain_search", {"query": "descales"}))
        updated = text(
            await g.call_tool(
                "brain_put", {"slug": "house/kettle", "content": "New kettle.", "expected_version": 1}
            )
        )

    assert read.status_code == 200 and read.content == content.encode()
    assert written.status_code < 300, written.text
    assert hits["hits"] and hits["hits"][0]["path"] == "house/boiler"
    assert "slug: default::house/kettle" in kettle and "The kettle descales on Fridays." in kettle
    assert [p["slug"] for p in listed] == ["default::house/kettle"]
    assert [h["slug"] for h in found] == ["default::house/kettle"]
    assert updated == "Updated default::house/kettle (version 2)"


async def test_mutations_are_audited_with_their_collection_and_page(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "A"}))
        text(await g.call_tool("brain_put", {"slug": "b", "content": "B"}))
        text(await g.call_tool("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "k"}))
        text(await g.call_tool("brain_link_close", {"link_id": 1, "valid_until": "2020-01"}))
        body(await g.call_tool("brain_tags", {"slug": "a", "add": ["t"]}))
        body(await g.call_tool("brain_gap", {"query": "q", "slug": "a"}))
        body(await g.call_tool("brain_raw", {"slug": "a", "source": "s", "data": {}}))
        body(await g.call_tool("brain_list", {}))

    brain = live.container.brains.get("default")
    entries, _ = live.container.audit.query(tenant="local", limit=100)
    seen = sorted((e.action, e.target) for e in entries if e.action.startswith("mcp.brain_"))
    assert seen == [
        ("mcp.brain_gap", "default::a"),
        ("mcp.brain_link", "default::a"),
        ("mcp.brain_link_close", "link:1"),
        ("mcp.brain_put", "default::a"),
        ("mcp.brain_put", "default::b"),
        ("mcp.brain_raw", "default::a"),
        ("mcp.brain_tags", "default::a"),
    ]
    assert {e.brain_id for e in entries if e.action.startswith("mcp.brain_")} == {brain.id}
