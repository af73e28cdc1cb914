"""Links through the gbrain surface over HTTP: brain_link (close-instead-of-create), brain_link_close,
brain_backlinks and brain_graph with their temporal filters, and gbrain's three validity formats."""

from __future__ import annotations

import pytest

from tests.integration.gbrain.conftest import body, gbrain, refused, text
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio
FORMAT = "expected YYYY-MM, YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SSZ"


async def pages(live: LiveServer, *slugs: str) -> None:
    async with gbrain(live) as g:
        for slug in slugs:
            text(await g.call_tool("brain_put", {"slug": slug, "content": f"---\ntype: person\n---\n{slug}"}))


async def test_link_backlinks_and_close(live: LiveServer) -> None:
    await pages(live, "people/alice", "companies/acme", "people/bob")
    async with gbrain(live) as g:
        linked = text(
            await g.call_tool(
                "brain_link",
                {
                    "from_slug": "people/alice",
                    "to_slug": "companies/acme",
                    "relationship": "works_at",
                    "valid_from": "2020-01",
                },
            )
        )
        text(
            await g.call_tool(
                "brain_link",
                {"from_slug": "people/bob", "to_slug": "companies/acme", "relationship": "invested_in"},
            )
        )
        both = body(await g.call_tool("brain_backlinks", {"slug": "companies/acme"}))
        closed = text(await g.call_tool("brain_link_close", {"link_id": 1, "valid_until": "2021-06-30"}))
        current = body(
            await g.call_tool("brain_backlinks", {"slug": "companies/acme", "temporal": "current"})
        )
        history = body(await g.call_tool("brain_backlinks", {"slug": "companies/acme", "temporal": "all"}))
        synonym = body(
            await g.call_tool("brain_backlinks", {"slug": "companies/acme", "temporal": "history"})
        )
        limited = body(
            await g.call_tool("brain_backlinks", {"slug": "companies/acme", "temporal": "all", "limit": 1})
        )
        missing = await refused(g, "brain_link_close", {"link_id": 99, "valid_until": "2021-06-30"})
        year_only = await refused(g, "brain_link_close", {"link_id": 2, "valid_until": "2019"})
        no_page = await refused(
            g, "brain_link", {"from_slug": "people/alice", "to_slug": "people/zed", "relationship": "knows"}
        )

    assert linked == "Linked default::people/alice → default::companies/acme (works_at)"
    assert both == [
        {
            "id": 2,
            "from_slug": "default::people/bob",
            "relationship": "invested_in",
            "valid_from": None,
            "valid_until": None,
        },
        {
            "id": 1,
            "from_slug": "default::people/alice",
            "relationship": "works_at",
            "valid_from": "2020-01",
            "valid_until": None,
        },
    ]
    assert closed == "Closed link 1 valid_until=2021-06-30"
    assert [b["id"] for b in current] == [2]
    assert [b["id"] for b in history] == [b["id"] for b in synonym] == [2, 1]
    assert history[1]["valid_until"] == "2021-06-30" and [b["id"] for b in limited] == [2]
    assert (missing.code, missing.message) == (-32001, "link not found: id 99")
    assert (year_only.code, year_only.message) == (-32602, f"invalid valid_until: {FORMAT}")
    assert (no_page.code, no_page.message) == (-32001, "page not found: default::people/zed")


async def test_a_link_with_valid_until_closes_the_open_one_instead(live: LiveServer) -> None:
    await pages(live, "a", "b")
    async with gbrain(live) as g:
        text(await g.call_tool("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows"}))
        text(
            await g.call_tool(
                "brain_link",
                {"from_slug": "a", "to_slug": "b", "relationship": "knows", "valid_until": "2025-01-01"},
            )
        )
        history = body(await g.call_tool("brain_backlinks", {"slug": "b", "temporal": "all"}))
        interval = {"valid_from": "2024-05-01", "valid_until": "2024-01-01"}
        before = await refused(
            g, "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows", **interval}
        )

    assert [(b["id"], b["valid_until"]) for b in history] == [(1, "2025-01-01")]
    assert before.code == -32602 and "before valid_from" in before.message


@pytest.mark.parametrize("value", ["2024-05", "2024-05-17", "2024-05-17T08:30:00Z"])
async def test_the_three_validity_formats_are_accepted(live: LiveServer, value: str) -> None:
    await pages(live, "a", "b")
    async with gbrain(live) as g:
        text(
            await g.call_tool(
                "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows", "valid_from": value}
            )
        )
        closed = text(await g.call_tool("brain_link_close", {"link_id": 1, "valid_until": value}))
        found = body(await g.call_tool("brain_backlinks", {"slug": "b", "temporal": "all"}))
    assert closed == f"Closed link 1 valid_until={value}"
    assert found[0]["valid_from"] == found[0]["valid_until"] == value


@pytest.mark.parametrize(
    "value",
    [
        "2024",
        "2024-5-17",
        "2024-13",
        "2024-02-30",
        "2024-05-17T08:30:00",
        "2024-05-17T08:30:00+02:00",
        "2024-05-17T08:30:00.5Z",
        "2024-05-17 08:30:00Z",
        "2024-05-17T25:00:00Z",
        "yesterday",
        "",
    ],
)
async def test_other_validity_forms_are_refused(live: LiveServer, value: str) -> None:
    await pages(live, "a", "b")
    async with gbrain(live) as g:
        start = await refused(
            g, "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows", "valid_from": value}
        )
        end = await refused(
            g, "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows", "valid_until": value}
        )
        links = body(await g.call_tool("brain_backlinks", {"slug": "b", "temporal": "all"}))
    assert (start.code, start.message) == (-32602, f"invalid valid_from: {FORMAT}")
    assert (end.code, end.message) == (-32602, f"invalid valid_until: {FORMAT}")
    assert links == []


@pytest.mark.parametrize(
    ("relationship", "message"),
    [
        ("", "invalid relationship: must not be empty"),
        ("Works At", "invalid relationship: allowed characters are [a-z0-9_-]"),
        ("r" * 65, "invalid relationship: exceeds maximum length of 64 characters"),
    ],
)
async def test_relationships_follow_gbrains_rules(live: LiveServer, relationship: str, message: str) -> None:
    await pages(live, "a", "b")
    async with gbrain(live) as g:
        error = await refused(
            g, "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": relationship}
        )
    assert (error.code, error.message) == (-32602, message)


async def test_graph_walks_outbound_links_to_its_depth(live: LiveServer) -> None:
    await pages(live, "a", "b", "c", "d")
    async with gbrain(live) as g:
        for source, target in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")):
            text(
                await g.call_tool(
                    "brain_link", {"from_slug": source, "to_slug": target, "relationship": "next"}
                )
            )
        text(await g.call_tool("brain_link_close", {"link_id": 2, "valid_until": "2000-01"}))  # b -> c ended
        default = body(await g.call_tool("brain_graph", {"slug": "a"}))
        current = body(await g.call_tool("brain_graph", {"slug": "a", "depth": 3}))
        history = body(await g.call_tool("brain_graph", {"slug": "a", "depth": 3, "temporal": "all"}))
        one = body(await g.call_tool("brain_graph", {"slug": "a", "depth": 1, "temporal": "all"}))
        bad = await refused(g, "brain_graph", {"slug": "a", "temporal": "sometimes"})
        negative = await refused(g, "brain_graph", {"slug": "a", "depth": -1})

    assert default == {
        "nodes": [
            {"slug": "default::a", "type": "person", "title": "a"},
            {"slug": "default::b", "type": "person", "title": "b"},
        ],
        "edges": [
            {
                "from": "default::a",
                "to": "default::b",
                "relationship": "next",
                "valid_from": None,
                "valid_until": None,
            }
        ],
    }
    assert [n["slug"] for n in current["nodes"]] == ["default::a", "default::b"]
    assert [n["slug"] for n in history["nodes"]] == ["default::a", "default::b", "default::c", "default::d"]
    assert len(history["edges"]) == 3 and [n["slug"] for n in one["nodes"]] == ["default::a", "default::b"]
    assert (bad.code, bad.message) == (-32602, "invalid temporal filter: sometimes")
    assert negative.code == -32602


async def test_links_across_collections_are_refused(live: LiveServer) -> None:
    live.container.brains.create("Work", slug="work")
    live.container.brains.create("Home", slug="home")
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "work::a", "content": "A"}))
        text(await g.call_tool("brain_put", {"slug": "home::b", "content": "B"}))
        cross = await refused(
            g, "brain_link", {"from_slug": "work::a", "to_slug": "home::b", "relationship": "knows"}
        )
        text(await g.call_tool("brain_put", {"slug": "work::b", "content": "B"}))
        text(await g.call_tool("brain_put", {"slug": "home::a", "content": "A"}))
        text(
            await g.call_tool(
                "brain_link", {"from_slug": "work::a", "to_slug": "work::b", "relationship": "k"}
            )
        )
        text(
            await g.call_tool(
                "brain_link", {"from_slug": "home::b", "to_slug": "home::a", "relationship": "k"}
            )
        )
        twice = await refused(g, "brain_link_close", {"link_id": 1, "valid_until": "2020-01"})

    assert cross.code == -32602 and "different collections" in cross.message
    assert twice.code == -32002
    assert twice.data == {"code": "ambiguous_link", "candidates": ["default", "home"]}


async def test_a_page_written_where_a_deleted_one_was_starts_without_its_links(live: LiveServer) -> None:
    await pages(live, "people/alice", "people/bob", "companies/acme")
    async with gbrain(live) as g:
        for start, end in (("people/alice", "people/bob"), ("people/bob", "companies/acme")):
            text(
                await g.call_tool("brain_link", {"from_slug": start, "to_slug": end, "relationship": "knows"})
            )
        brain = live.container.brains.get("default")
        bob = next(d for d in live.container.documents.documents(brain) if d.path.startswith("people/bob"))
        live.container.documents.delete(brain, bob.path)  # a REST or UI delete: soft

        text(await g.call_tool("brain_put", {"slug": "people/bob", "content": "An unrelated new Bob."}))
        into_new = body(await g.call_tool("brain_backlinks", {"slug": "people/bob"}))
        from_new = body(await g.call_tool("brain_backlinks", {"slug": "companies/acme"}))

    assert live.container.documents.get(brain, bob.path).id != bob.id
    assert into_new == [] and from_new == []


@pytest.mark.parametrize("written_again", [False, True])
async def test_the_graph_reaches_nothing_through_a_deleted_page(
    live: LiveServer, written_again: bool
) -> None:
    """alice → bob → acme with bob deleted (and perhaps a new bob written at its slug): alice's
    graph stops at alice; acme was reached only through the deleted page's links."""
    await pages(live, "people/alice", "people/bob", "companies/acme")
    async with gbrain(live) as g:
        for start, end in (("people/alice", "people/bob"), ("people/bob", "companies/acme")):
            text(
                await g.call_tool("brain_link", {"from_slug": start, "to_slug": end, "relationship": "knows"})
            )
        whole = body(await g.call_tool("brain_graph", {"slug": "people/alice", "depth": 2}))
        brain = live.container.brains.get("default")
        bob = next(d for d in live.container.documents.documents(brain) if d.path.startswith("people/bob"))
        live.container.documents.delete(brain, bob.path)
        if written_again:
            text(await g.call_tool("brain_put", {"slug": "people/bob", "content": "An unrelated new Bob."}))
        after = body(await g.call_tool("brain_graph", {"slug": "people/alice", "depth": 2}))

    assert [n["slug"] for n in whole["nodes"]] == [
        "default::people/alice",
        "default::people/bob",
        "default::companies/acme",
    ]
    assert [n["slug"] for n in after["nodes"]] == ["default::people/alice"]
    assert after["edges"] == []


async def test_links_from_deleted_pages_do_not_count_toward_the_backlinks_limit(live: LiveServer) -> None:
    await pages(live, "people/alice", "people/bob", "companies/acme")
    async with gbrain(live) as g:
        for start in ("people/alice", "people/bob"):
            link = {"from_slug": start, "to_slug": "companies/acme", "relationship": "works_at"}
            text(await g.call_tool("brain_link", link))
        brain = live.container.brains.get("default")
        bob = next(d for d in live.container.documents.documents(brain) if d.path.startswith("people/bob"))
        live.container.documents.delete(brain, bob.path)  # the newest link's source: gone

        one = body(await g.call_tool("brain_backlinks", {"slug": "companies/acme", "limit": 1}))

    assert [b["from_slug"] for b in one] == ["default::people/alice"]
