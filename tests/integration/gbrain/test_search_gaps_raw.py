"""brain_search, brain_query (exact slug, hybrid, progressive expansion, automatic gaps),
brain_gap/brain_gaps, brain_raw, brain_check and brain_stats over HTTP."""

from __future__ import annotations

import hashlib

import pytest

from tests.integration.gbrain.conftest import body, gbrain, page, refused, text
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


async def test_search_is_keyword_only_over_pages(live: LiveServer) -> None:
    c = live.container
    async with gbrain(live) as g:
        text(
            await g.call_tool(
                "brain_put", {"slug": "companies/acme", "content": page("Acme", "Acme forges anvils.")}
            )
        )
        text(
            await g.call_tool(
                "brain_put", {"slug": "people/wile", "content": page("Wile", "Wile buys anvils, anvils.")}
            )
        )
        text(await g.call_tool("brain_put", {"slug": "people/road", "content": page("Road", "Meep meep.")}))
        c.documents.write(c.brains.get("default"), "notes/anvils.txt", b"anvils anvils anvils")  # not a page
        found = body(await g.call_tool("brain_search", {"query": "anvils"}))
        people = body(await g.call_tool("brain_search", {"query": "anvils", "wing": "people"}))
        one = body(await g.call_tool("brain_search", {"query": "anvils", "limit": 1}))
        nothing = body(await g.call_tool("brain_search", {"query": "dynamite"}))
        elsewhere = await refused(g, "brain_search", {"query": "anvils", "collection": "nowhere"})

    assert {h["slug"] for h in found} == {"default::companies/acme", "default::people/wile"}
    assert set(found[0]) == {"slug", "title", "summary", "snippet", "score", "wing", "collection"}
    assert found[0]["score"] >= found[1]["score"] > 0
    assert [h["slug"] for h in people] == ["default::people/wile"] and people[0]["wing"] == "people"
    assert len(one) == 1 and nothing == []
    assert (elsewhere.code, elsewhere.message) == (-32001, "collection not found: nowhere")


async def test_query_exact_slug_hybrid_expansion_and_automatic_gaps(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(
            await g.call_tool(
                "brain_put", {"slug": "people/alice", "content": page("Alice", "Alice forges anvils.")}
            )
        )
        text(
            await g.call_tool(
                "brain_put", {"slug": "people/bob", "content": page("Bob", "Bob sells anvils.")}
            )
        )
        text(
            await g.call_tool("brain_put", {"slug": "places/forge", "content": page("Forge", "A hot room.")})
        )
        text(
            await g.call_tool(
                "brain_link",
                {"from_slug": "people/alice", "to_slug": "places/forge", "relationship": "works_in"},
            )
        )
        exact = body(await g.call_tool("brain_query", {"query": "people/alice"}))
        wiki = body(await g.call_tool("brain_query", {"query": "[[people/bob]]"}))
        spaced = body(await g.call_tool("brain_query", {"query": " [[ people/bob ]] "}))
        exact_expanded = body(await g.call_tool("brain_query", {"query": "people/alice", "depth": " auto "}))
        hybrid = body(await g.call_tool("brain_query", {"query": "anvils", "limit": 2}))
        expanded = body(await g.call_tool("brain_query", {"query": "anvils", "limit": 2, "depth": "AUTO"}))
        empty = body(await g.call_tool("brain_query", {"query": "   "}))
        gaps_before = body(await g.call_tool("brain_gaps", {}))
        lonely = body(await g.call_tool("brain_query", {"query": "zeppelin"}))
        gaps_after = body(await g.call_tool("brain_gaps", {}))

    assert exact == [
        {
            "slug": "default::people/alice",
            "title": "Alice",
            "summary": "Alice forges anvils.",
            "score": 1.0,
            "wing": "people",
            "collection": "default",
        }
    ]
    assert [h["slug"] for h in wiki] == [h["slug"] for h in spaced] == ["default::people/bob"]
    assert [h["slug"] for h in exact_expanded] == ["default::people/alice", "default::places/forge"]
    assert {h["slug"] for h in hybrid} == {"default::people/alice", "default::people/bob"}
    assert all(set(h) == {"slug", "title", "summary", "score", "wing", "collection"} for h in hybrid)
    assert expanded[:2] == hybrid and len(expanded) == 3
    assert expanded[-1] == {
        "slug": "default::places/forge",
        "title": "Forge",
        "summary": "A hot room.",
        "score": 0.0,
        "wing": "places",
        "collection": "default",
    }
    assert empty == [] and gaps_before == []
    assert len(lonely) < 2 or all(h["score"] < 0.3 for h in lonely)
    assert [g_["query_hash"] for g_ in gaps_after] == [sha256("zeppelin")]


async def test_gaps_are_hashed_and_logged_once(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "people/alice", "content": "Alice"}))
        first = body(await g.call_tool("brain_gap", {"query": "Who funds Alice?", "context": "board prep"}))
        again = body(await g.call_tool("brain_gap", {"query": "Who funds Alice?"}))
        bound = body(await g.call_tool("brain_gap", {"query": "Alice's age?", "slug": "people/alice"}))
        listed = body(await g.call_tool("brain_gaps", {}))
        every = body(await g.call_tool("brain_gaps", {"resolved": True, "limit": 1}))
        empty = await refused(g, "brain_gap", {"query": "  "})
        long = await refused(g, "brain_gap", {"query": "q", "context": "c" * 501})
        nowhere = await refused(g, "brain_gap", {"query": "q", "slug": "people/zed"})
        after = body(await g.call_tool("brain_gaps", {"limit": 1000}))

    assert first == again == {"id": 1, "query_hash": sha256("Who funds Alice?"), "page_id": None}
    assert bound["id"] == 2 and bound["page_id"]
    assert [x["id"] for x in listed] == [2, 1] and len(every) == 1
    assert set(listed[0]) == {
        "id",
        "page_id",
        "query_hash",
        "context",
        "confidence_score",
        "sensitivity",
        "resolved_at",
        "resolved_by_slug",
        "detected_at",
    }
    assert listed[1]["context"] == "" and listed[1]["sensitivity"] == "internal"
    assert "Who funds" not in str(listed)
    assert (empty.code, empty.message) == (-32602, "query must not be empty")
    assert (long.code, long.message) == (-32602, "context exceeds maximum length of 500 characters")
    assert nowhere.code == -32001 and after == listed


async def test_raw_data_one_row_per_source_unless_overwritten(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "people/alice", "content": "Alice"}))
        first = body(
            await g.call_tool("brain_raw", {"slug": "people/alice", "source": "exa", "data": {"v": 1}})
        )
        duplicate = await refused(g, "brain_raw", {"slug": "people/alice", "source": "exa", "data": {"v": 2}})
        replaced = body(
            await g.call_tool(
                "brain_raw", {"slug": "people/alice", "source": "exa", "data": {"v": 3}, "overwrite": True}
            )
        )
        other = body(
            await g.call_tool("brain_raw", {"slug": "people/alice", "source": "crustdata", "data": {}})
        )
        array = await refused(g, "brain_raw", {"slug": "people/alice", "source": "exa", "data": [1, 2]})
        scalar = await refused(g, "brain_raw", {"slug": "people/alice", "source": "exa", "data": 5})
        no_source = await refused(g, "brain_raw", {"slug": "people/alice", "source": " ", "data": {}})
        no_page = await refused(g, "brain_raw", {"slug": "people/zed", "source": "exa", "data": {}})

    c = live.container
    brain = c.brains.get("default")
    stored = c.raw_data.get(brain, c.pages.get("people/alice").document.id, "exa")
    assert first == {"id": 1} and replaced == {"id": 2} and other == {"id": 3}
    assert duplicate.code == -32003
    assert duplicate.message == (
        "raw data for source 'exa' already exists on 'default::people/alice'; set overwrite=true to replace"
    )
    assert stored is not None and stored[1] == {"v": 3}
    message = "data must be a JSON object, not an array or scalar"
    assert (array.code, array.message) == (scalar.code, scalar.message) == (-32602, message)
    assert (no_source.code, no_source.message) == (-32602, "source must not be empty")
    assert no_page.code == -32001


async def test_check_flags_pages_that_disagree(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(
            await g.call_tool(
                "brain_put",
                {
                    "slug": "people/alice",
                    "content": page("Alice", "Alice works at Acme Corp.\n\n- Role: CEO", city="Berlin"),
                },
            )
        )
        text(
            await g.call_tool(
                "brain_put",
                {
                    "slug": "notes/meeting",
                    "content": page("Alice", "Alice works at Globex Inc.\n\nRole: CEO", city="Berlin"),
                },
            )
        )
        text(
            await g.call_tool("brain_put", {"slug": "notes/other", "content": page("Bob", "Bob is a pilot.")})
        )
        text(
            await g.call_tool("brain_put", {"slug": "notes/bob", "content": page("Bob", "Bob is a sailor.")})
        )
        everything = body(await g.call_tool("brain_check", {}))
        alice = body(await g.call_tool("brain_check", {"slug": "people/alice"}))
        bob = body(await g.call_tool("brain_check", {"slug": "notes/bob"}))
        stats = body(await g.call_tool("brain_stats", {}))
        missing = await refused(g, "brain_check", {"slug": "people/zed"})

    assert alice == [
        {
            "page_slug": "default::notes/meeting",
            "other_page_slug": "default::people/alice",
            "type": "assertion_conflict",
            "description": "Alice has conflicting works_at assertions: Acme Corp vs Globex Inc",
            "detected_at": alice[0]["detected_at"],
        }
    ]
    assert alice[0]["detected_at"].endswith("Z") and len(alice[0]["detected_at"]) == 20
    assert [x["description"] for x in bob] == ["Bob has conflicting is_a assertions: pilot vs sailor"]
    assert len(everything) == 2 and stats["contradiction_count"] == 2
    assert stats["assertion_count"] == 8  # Alice x2 pages (works_at, role, city), Bob x2 (is_a)
    assert missing.code == -32001


async def test_stats_counts_what_the_brain_holds(live: LiveServer) -> None:
    async with gbrain(live) as g:
        empty = body(await g.call_tool("brain_stats", {}))
        text(await g.call_tool("brain_put", {"slug": "a", "content": "Apples."}))
        text(await g.call_tool("brain_put", {"slug": "b", "content": "Bananas."}))
        text(await g.call_tool("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "next"}))
        body(await g.call_tool("brain_gap", {"query": "cherries?"}))
        stats = body(await g.call_tool("brain_stats", {}))

    assert set(stats) == {
        "page_count",
        "link_count",
        "assertion_count",
        "contradiction_count",
        "gap_count",
        "embedding_count",
        "active_model",
        "db_size_bytes",
    }
    assert empty["page_count"] == 0 and empty["active_model"] == live.container.adapters.embedder.model_id
    assert stats["page_count"] == 2 and stats["link_count"] == 1 and stats["gap_count"] == 1
    assert stats["embedding_count"] >= 2 and stats["db_size_bytes"] == len(b"Apples.") + len(b"Bananas.")


async def test_a_page_whose_bytes_are_damaged_leaves_the_others_searchable_and_listed(
    live: LiveServer,
) -> None:
    c = live.container
    async with gbrain(live) as g:
        for name in ("alice", "bob", "carol"):
            content = page(name.title(), f"{name.title()} forges anvils in the quarry.")
            text(await g.call_tool("brain_put", {"slug": f"people/{name}", "content": content}))
        damaged = c.documents.get(c.brains.get("default"), "people/bob")
        c.adapters.blobs.delete(damaged.blob_key)
        found = body(await g.call_tool("brain_search", {"query": "anvils quarry"}))
        asked = body(await g.call_tool("brain_query", {"query": "who forges anvils"}))
        listed = body(await g.call_tool("brain_list", {}))
        read = await refused(g, "brain_get", {"slug": "people/bob"})

    expected = {"default::people/alice", "default::people/carol"}
    assert {h["slug"] for h in found} == expected
    assert expected <= {h["slug"] for h in asked} and "default::people/bob" not in {h["slug"] for h in asked}
    assert {p["slug"] for p in listed} == expected
    assert "people/bob" in read.message  # reading that page says it is damaged
