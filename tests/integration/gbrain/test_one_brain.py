"""One brain through every surface: a note remembered on the canonical surface is a gbrain page
(found by brain_search and brain_query, read by brain_get), and gbrain names the default brain
`default` whichever surface made it, as gbrain names its first collection."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.integration.gbrain.conftest import body, gbrain, text
from tests.integration.mcp.conftest import LiveServer, ok

pytestmark = pytest.mark.anyio
NOTE = "# Boiler service\n\nHargreaves services the boiler every June and bleeds the radiators."


async def test_a_note_remembered_on_the_canonical_surface_is_a_gbrain_page(live: LiveServer) -> None:
    async with Client(live.url) as canonical:
        ok(await canonical.call_tool("memory_create_brain", {"name": "Notes"}))
        note = ok(await canonical.call_tool("memory_remember", {"content": NOTE, "title": "Boiler service"}))
    slug = note["path"].removesuffix(".md")
    async with gbrain(live) as g:
        found = body(await g.call_tool("brain_search", {"query": "Hargreaves radiators"}))
        queried = body(await g.call_tool("brain_query", {"query": "who services the boiler"}))
        exact = body(await g.call_tool("brain_query", {"query": slug}))
        rendered = text(await g.call_tool("brain_get", {"slug": slug}))
        listed = body(await g.call_tool("brain_list", {}))
        tagged = body(await g.call_tool("brain_tags", {"slug": slug, "add": ["house"]}))
    async with Client(live.url) as canonical:
        hits = ok(await canonical.call_tool("memory_search", {"query": "Hargreaves radiators"}))

    assert note["path"].startswith("memory/global/") and note["path"].endswith(".md")
    assert [h["slug"] for h in found] == [f"default::{slug}"]
    assert found[0]["summary"] == "Hargreaves services the boiler every June and bleeds the radiators."
    assert queried[0]["slug"] == f"default::{slug}"
    assert exact == [
        {
            "slug": f"default::{slug}",
            "title": slug,
            "summary": found[0]["summary"],
            "score": 1.0,
            "wing": "memory",
            "collection": "default",
        }
    ]
    assert f"\nslug: default::{slug}\n" in rendered and NOTE in rendered
    assert [p["slug"] for p in listed] == [f"default::{slug}"]
    assert tagged == ["house"]
    # still one document: the canonical surface finds the note where it wrote it, tagged by gbrain
    assert [h["path"] for h in hits["hits"]] == [note["path"]]


async def test_a_page_put_through_gbrain_updates_the_remembered_note_in_place(live: LiveServer) -> None:
    async with Client(live.url) as canonical:
        ok(await canonical.call_tool("memory_create_brain", {"name": "Notes"}))
        note = ok(await canonical.call_tool("memory_remember", {"content": NOTE}))
    slug = note["path"].removesuffix(".md")
    async with gbrain(live) as g:
        updated = text(
            await g.call_tool(
                "brain_put", {"slug": slug, "content": "Serviced in July now.", "expected_version": 1}
            )
        )
    brain = live.container.brains.get("notes")

    assert updated == f"Updated default::{slug} (version 2)"
    assert live.container.documents.read(brain, note["path"]) == b"Serviced in July now."
    assert live.snapshot()[1][brain.id] == [note["path"]]


async def test_slugs_name_the_default_brain_default_whichever_surface_made_it(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as zengram:
        stored = await zengram.call_tool(
            "brain_store", {"type": "fact", "content": "The VPN uses WireGuard."}
        )
    assert not stored.is_error, stored.content
    first = live.container.brains.list()
    async with gbrain(live) as g:
        created = text(await g.call_tool("brain_put", {"slug": "people/alice", "content": "# Alice"}))
        rendered = text(await g.call_tool("brain_get", {"slug": "default::people/alice"}))
        collections = body(await g.call_tool("brain_collections", {}))
        gap = body(await g.call_tool("brain_query", {"query": "people/alice"}))

    assert [b.slug for b in first] == ["shared-brain"]  # zengram's brain, made by its first store
    assert created == "Created default::people/alice (version 1)"
    assert "\nslug: default::people/alice\n" in rendered
    assert [(c["name"], c["is_write_target"], c["page_count"]) for c in collections] == [("default", True, 1)]
    assert [h["slug"] for h in gap] == ["default::people/alice"]
    assert live.container.documents.get(first[0], "people/alice").version == 1  # the same brain
