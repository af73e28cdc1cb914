"""Every Mnemosyne tool through the official MCP client over HTTP: listings with their clamps,
search with its three legs, filters and fields, get_chunk, get_health, and bad input refused."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.mnemosyne.conftest import body, failure, mnemosyne, stock

pytestmark = pytest.mark.anyio


async def test_listings_with_their_fields_filters_and_clamps(live: LiveServer) -> None:
    shelf = stock(live.container)
    async with mnemosyne(live) as m:
        libraries = body(await m.call_tool("list_libraries", {}))
        one = body(await m.call_tool("list_libraries", {"limit": 1, "offset": 1}))
        clamped = body(await m.call_tool("list_libraries", {"limit": 5000}))
        floor = body(await m.call_tool("list_libraries", {"limit": 0}))
        collections = body(await m.call_tool("list_collections", {"library_uid": shelf.novels.uid}))
        none_there = body(await m.call_tool("list_collections", {"library_uid": shelf.manuals.uid}))
        items = body(await m.call_tool("list_items", {"library_uid": shelf.novels.uid}))
        in_series = body(await m.call_tool("list_items", {"collection_uid": shelf.series_uid}))
        negative = failure(await m.call_tool("list_items", {"offset": -1}))

    assert libraries["limit"] == 50 and libraries["offset"] == 0
    assert libraries["libraries"] == [
        {
            "uid": shelf.novels.uid,
            "name": "Austen novels",
            "library_type": "fiction",
            "description": "Novels",
        },
        {"uid": shelf.manuals.uid, "name": "Pump manuals", "library_type": "technical", "description": ""},
    ]
    assert [lib["name"] for lib in one["libraries"]] == ["Pump manuals"] and one["limit"] == 1
    assert clamped["limit"] == 200 and floor["limit"] == 1 and len(floor["libraries"]) == 1
    assert collections["collections"] == [
        {
            "uid": shelf.series_uid,
            "name": "Pride and Prejudice",
            "description": "The novel",
            "library_uid": shelf.novels.uid,
            "library_name": "Austen novels",
        }
    ]
    assert none_there["collections"] == []
    assert [i["title"] for i in items["items"]] == ["Chapter One", "Chapter Two"]
    assert set(items["items"][0]) == {
        "uid", "title", "item_type", "file_type", "chunk_count", "image_count", "embedding_status",
    }  # fmt: skip
    first = items["items"][0]
    assert (first["item_type"], first["file_type"], first["embedding_status"]) == (
        "document",
        "md",
        "completed",
    )
    assert first["chunk_count"] >= 1 and first["image_count"] == 0
    assert [i["title"] for i in in_series["items"]] == ["Chapter One"]
    assert "offset" in negative


async def test_search_fuses_three_legs_and_names_the_leg_of_each_candidate(live: LiveServer) -> None:
    shelf = stock(live.container)
    async with mnemosyne(live) as m:
        found = body(await m.call_tool("search", {"query": "Netherfield Park in the rain"}))
        graph = body(await m.call_tool("search", {"query": "Netherfield Park", "search_types": ["graph"]}))
        words = body(await m.call_tool("search", {"query": "Hydrex torque", "search_types": ["fulltext"]}))
        technical = body(await m.call_tool("search", {"query": "pump", "library_type": "technical"}))
        one_library = body(await m.call_tool("search", {"query": "Bennet", "library_uid": shelf.manuals.uid}))
        series = body(
            await m.call_tool("search", {"query": "Bennet family", "collection_uid": shelf.series_uid})
        )
        limited = body(await m.call_tool("search", {"query": "Bennet", "limit": 1}))

    assert found["query"] == "Netherfield Park in the rain"
    assert found["search_types_used"] == ["vector", "fulltext", "graph"]
    assert found["reranker_used"] is False and found["reranker_model"] is None  # none configured
    assert found["total_candidates"] >= len(found["candidates"]) >= 1
    assert isinstance(found["search_time_ms"], float) and found["images"] == []
    top = found["candidates"][0]
    assert set(top) == {
        "chunk_uid",
        "item_uid",
        "item_title",
        "library_type",
        "text_preview",
        "score",
        "source",
        "library_uid",
        "library_name",
    }
    assert top["item_title"] == "Chapter One" and top["library_type"] == "fiction"
    assert top["library_name"] == "Austen novels"
    assert "Netherfield Park" in top["text_preview"] and top["source"] in ("vector", "fulltext", "graph")
    assert len({c["chunk_uid"] for c in found["candidates"]}) == len(found["candidates"])  # deduplicated
    scores = [c["score"] for c in found["candidates"]]
    assert scores == sorted(scores, reverse=True)

    assert graph["search_types_used"] == ["graph"] and graph["candidates"]
    assert {c["source"] for c in graph["candidates"]} == {"graph"}
    assert all("Netherfield Park" in c["text_preview"] for c in graph["candidates"])
    assert [c["item_title"] for c in words["candidates"]] == ["Installing the pump"]
    assert words["candidates"][0]["source"] == "fulltext"
    assert {c["library_type"] for c in technical["candidates"]} == {"technical"}
    assert one_library["candidates"] == [] or {c["item_title"] for c in one_library["candidates"]} <= {
        "Installing the pump"
    }
    assert {c["item_title"] for c in series["candidates"]} == {"Chapter One"}
    assert len(limited["candidates"]) == 1


async def test_get_chunk_reads_the_whole_chunk(live: LiveServer) -> None:
    stock(live.container)
    async with mnemosyne(live) as m:
        found = body(await m.call_tool("search", {"query": "M8 bolts torqued", "search_types": ["fulltext"]}))
        uid = found["candidates"][0]["chunk_uid"]
        chunk = body(await m.call_tool("get_chunk", {"chunk_uid": uid}))
        missing = failure(await m.call_tool("get_chunk", {"chunk_uid": "chk_nosuchthing_0"}))
        junk = failure(await m.call_tool("get_chunk", {"chunk_uid": "../etc/passwd"}))

    assert chunk["chunk_uid"] == uid and chunk["chunk_index"] == 0
    assert chunk["item_title"] == "Installing the pump" and chunk["library_type"] == "technical"
    assert "hydrexctl prime --litres 2" in chunk["text"]  # the code block, whole
    assert set(chunk) == {"chunk_uid", "chunk_index", "item_uid", "item_title", "library_type", "text"}
    assert missing == "chunk not found: chk_nosuchthing_0" and junk.startswith("chunk not found")


async def test_bad_input_is_refused_in_the_surfaces_style_and_changes_nothing(live: LiveServer) -> None:
    stock(live.container)
    async with mnemosyne(live) as m:
        kind = failure(await m.call_tool("search", {"query": "pump", "search_types": ["vector", "sonar"]}))
        empty = failure(await m.call_tool("search", {"query": "pump", "search_types": []}))
        genre = failure(await m.call_tool("search", {"query": "pump", "library_type": "poetry"}))
        blank = failure(await m.call_tool("search", {"query": "   "}))
        typed = failure(await m.call_tool("search", {"query": "pump", "limit": "many"}))
        listed = body(await m.call_tool("list_libraries", {}))

    assert kind == empty == "search_types must name one or more of: vector, fulltext, graph"
    assert genre.startswith("library_type must be one of: fiction, nonfiction, technical")
    assert blank == "query must not be empty" and "limit" in typed
    assert len(listed["libraries"]) == 2


async def test_get_health_names_the_seeds_checks_without_configuration(live: LiveServer) -> None:
    async with mnemosyne(live, credential=None) as m:
        health = body(await m.call_tool("get_health", {}))

    assert health["status"] == "ok"
    assert set(health["checks"]) == {"neo4j", "s3", "embedding"}
    for check in health["checks"].values():
        assert check["status"] == "ok" and isinstance(check["duration_ms"], float)
    assert health["checks"]["embedding"]["model"] == live.container.adapters.embedder.model_id
    assert str(live.data_dir) not in str(health)


class _Broken:
    """A store or index whose every read fails."""

    def __getattr__(self, name: str) -> Any:
        def fail(*_: object, **__: object) -> None:
            raise OSError("unreachable")

        return fail


@pytest.mark.parametrize(("broken", "failing"), [("records", "neo4j"), ("chunks", "neo4j"), ("blobs", "s3")])
async def test_get_health_reports_a_failing_store_under_the_seeds_check(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch, broken: str, failing: str
) -> None:
    """neo4j stands for the record store and the chunk index (what Neo4j holds for Mnemosyne:
    libraries, items, chunks and their indexes), s3 for the blob store."""
    monkeypatch.setattr(live.container.health, broken, _Broken())
    async with mnemosyne(live, credential=None) as m:
        health = body(await m.call_tool("get_health", {}))

    assert health["status"] == "error"
    assert {name: c["status"] for name, c in health["checks"].items()} == {
        "neo4j": "error" if failing == "neo4j" else "ok",
        "s3": "error" if failing == "s3" else "ok",
        "embedding": "ok",
    }
    assert "unreachable" not in str(health)
