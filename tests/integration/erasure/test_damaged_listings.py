"""One memory whose bytes cannot be read (its blob deleted, truncated, or never there, as an erasure
killed between its two steps leaves it) in a brain of 20 must not take down a listing or a
multi-item answer of any surface: each answers with the others, the damaged one kept with what its
record holds or left out (as its surface's shape allows), and a read of that one memory alone still
answers that its content is damaged. Embedded store and AWS adapters alike."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from cairn.services.thoughtmcp.models import NewMemory
from tests.integration.mcp.conftest import ServerThread
from tests.support.shapes import SHAPES, adapters_for

pytestmark = pytest.mark.anyio

TOKEN = "damaged-listings-token-0123456789"
USER = "xavier"
DAMAGES = ("deleted", "truncated", "never_stored")
DAMAGED = 1
"""Which of each kind's four items is damaged."""


@dataclass
class World:
    base: str
    c: Container
    brain: Brain
    damaged: dict[str, Document]
    """The one damaged item of each kind, by kind."""
    sound: dict[str, list[Document]]
    """The kind's other items."""

    def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(
            method, f"{self.base}{path}", headers={"authorization": f"Bearer {TOKEN}"}, timeout=120, **kwargs
        )

    async def tool(self, surface: str, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        """(is_error, payload) of one tool call: structured content, else the text parsed."""
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=120)
        async with Client(streamable_http_client(f"{self.base}{surface}", http_client=http)) as client:
            try:
                result = await client.call_tool(tool, args)
            except MCPError as exc:
                return True, {"error": exc.message}
        if result.structured_content is not None and not result.is_error:
            return False, result.structured_content
        text = result.content[0].text if result.content and result.content[0].type == "text" else ""
        try:
            return bool(result.is_error), json.loads(text)
        except ValueError:
            return bool(result.is_error), text


def _damage(c: Container, doc: Document, how: str) -> None:
    blobs = c.adapters.blobs
    if how == "deleted":
        blobs.delete(doc.blob_key)
    elif how == "truncated":
        data = blobs.get(doc.blob_key)
        blobs.put(doc.blob_key, data[: len(data) // 2])
    else:  # the record names bytes never stored (the erase's first step done, its second not)
        c.documents.repo.commit(
            [
                c.documents.repo.put_op(
                    doc.model_copy(update={"blob_key": doc.blob_key + "-gone"}), doc.version
                )
            ]
        )


def _build(c: Container) -> tuple[Brain, dict[str, list[Document]]]:
    """A brain of 20 memories, four of each kind a surface lists."""
    brain = c.brains.create("Alpha", slug="alpha", visibility="public", metadata={BRAIN_MARK: True})
    kinds: dict[str, list[Document]] = {k: [] for k in ("note", "fact", "page", "item", "thought")}
    collection = c.libraries.create_collection(c.libraries.library(brain.id), "shelf")
    for i in range(4):
        kinds["note"].append(
            c.ingest.remember(
                brain,
                f"# boiler {i}\n\nThe boiler number {i} is serviced in June.",
                path=f"memory/boiler-{i}.md",
            )
        )
        kinds["fact"].append(
            c.memories.store(
                brain,
                MemoryInput(
                    type=MemoryType.fact,
                    content=f"The staging database {i} of Harlowcorp lives in eu-west-{i}.",
                    source_agent="scout",
                    client_id="global",
                    key=f"db-{i}",
                ),
            ).memory
        )
        kinds["page"].append(
            c.pages.put(
                f"alpha::people/lead-{i}", f"# lead {i}\n\nRuns the pump team number {i}."
            ).page.document
        )
        kinds["item"].append(
            c.ingest.remember(
                brain,
                f"# manual {i}\n\nBolt the pump {i} to the frame.",
                path=f"{collection.folder}/manual-{i}.md",
            )
        )
        long = " It is kept behind the boiler." * 200 if i == DAMAGED else ""  # its text in the blob alone
        made = c.thoughts.remember(
            brain,
            NewMemory(
                content=f"The vault code {i} is written on the wall.{long}",
                user_id=USER,
                session_id="s1",
                sector="semantic",
            ),
        )
        thought = c.documents.repo.get_by_id(made["memoryId"])
        assert thought is not None
        kinds["thought"].append(thought)
    return brain, kinds


@pytest.fixture(params=[(shape, how) for shape in SHAPES for how in DAMAGES], ids=lambda p: "-".join(p))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    shape, how = request.param
    with adapters_for(shape, request, tmp_path) as adapters:
        (tmp_path / "ingest-root").mkdir()
        settings = Settings(
            data_dir=tmp_path / "data", ingest_root=tmp_path / "ingest-root", token=TOKEN, rate_limit_per_s=0
        )
        c = build_container(settings, adapters)
        brain, kinds = _build(c)
        damaged = {kind: docs[DAMAGED] for kind, docs in kinds.items()}
        for doc in damaged.values():
            _damage(c, c.documents.repo.get_by_id(doc.id) or doc, how)
        sound = {kind: [d for d in docs if d.id != damaged[kind].id] for kind, docs in kinds.items()}
        with ServerThread(c) as st:
            yield World(f"http://127.0.0.1:{st.port}", c, brain, damaged, sound)


def ids_in(rows: list[dict[str, Any]]) -> set[str]:
    return {row["id"] for row in rows}


def named(w: World, kind: str) -> list[dict[str, str]]:
    doc = w.damaged[kind]
    return [{"id": doc.id, "path": doc.path, "code": "damaged_content"}]


async def test_one_damaged_item_leaves_every_listing_answering(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """One world per store and damage (built once: 20 memories and a server), every surface asked."""
    await zengram_listings_answer_with_the_others_and_name_the_damaged_memory(world, caplog)
    await every_other_surface_lists_and_searches_around_the_damaged_item(world)
    the_web_ui_lists_around_the_damaged_item(world)


async def zengram_listings_answer_with_the_others_and_name_the_damaged_memory(
    w: World, caplog: pytest.LogCaptureFixture
) -> None:
    facts = {d.id for d in w.sound["fact"]}
    bad = w.damaged["fact"]
    with caplog.at_level(logging.WARNING, "cairn.documents.unreadable"):
        query = w.rest("GET", "/zengram/memory/query", params={"type": "fact"})
        briefing = w.rest("GET", "/zengram/briefing", params={"since": "2000-01-01", "format": "full"})
        export = w.rest("GET", "/zengram/export")
    assert [query.status_code, briefing.status_code, export.status_code] == [200, 200, 200], query.text
    assert ids_in(query.json()["results"]) == facts and query.json()["count"] == 3
    assert query.json()["unreadable"] == named(w, "fact")
    assert {e["id"] for e in briefing.json()["entries"]} == facts
    assert briefing.json()["unreadable"] == named(w, "fact")
    assert ids_in(export.json()["memories"]) == facts and export.json()["unreadable"] == named(w, "fact")
    told = [r.getMessage() for r in caplog.records if r.name == "cairn.documents.unreadable"]
    caplog.clear()
    assert len(told) == 3 and all(bad.id in t and "staging" not in t for t in told)

    for fmt in ("compact", "index", "full"):
        found = w.rest("GET", "/zengram/memory/search", params={"q": "staging database", "format": fmt})
        assert found.status_code == 200, (fmt, found.text)
        assert ids_in(found.json()["results"]) >= facts  # the damaged one is skipped (full) or from the index
    full = w.rest("GET", "/zengram/memory/search", params={"q": "staging database", "format": "full"}).json()
    assert bad.id not in ids_in(full["results"]) and "unreadable" not in full
    compact = w.rest("GET", "/zengram/briefing", params={"since": "2000-01-01"}).json()
    assert ids_in(compact["facts_updated"]) == facts
    stats = w.rest("GET", "/zengram/stats")
    assert stats.status_code == 200 and stats.json()["total_memories"] == 3  # left out, as query leaves it
    assert stats.json()["by_type"]["fact"] == 3

    for tool, args in (
        ("brain_query", {"type": "facts"}),
        ("brain_briefing", {"since": "2000-01-01", "format": "full"}),
        ("brain_export", {}),
        ("brain_search", {"query": "staging database"}),
        ("brain_search", {"query": "staging database", "format": "index"}),
        ("brain_stats", {}),
        ("brain_reflect", {"topic": "staging database Harlowcorp"}),
    ):
        err, said = await w.tool("/mcp/zengram", tool, args)
        assert not err, (tool, said)
        if tool == "brain_reflect":
            assert said["memories_analyzed"] == 3, said  # every sound fact; the damaged one skipped
        elif tool != "brain_stats":
            rows = said.get("results") or said.get("entries") or said.get("memories")
            assert ids_in(rows) >= facts, (tool, said)

    err, said = await w.tool("/mcp/zengram", "brain_update", {"memory_id": bad.id, "importance": "high"})
    assert err and ("damaged" in str(said) or "missing" in str(said)), said


async def every_other_surface_lists_and_searches_around_the_damaged_item(w: World) -> None:
    docs = w.rest("GET", "/v1/brains/alpha/documents")
    assert docs.status_code == 200
    listed = ids_in(docs.json()["items"])
    assert all(d.id in listed for d in w.damaged.values())  # a listing of records: each kept, as it is
    paths = w.rest("GET", "/v1/brains/alpha/documents", params={"recursive": "true"})
    assert paths.status_code == 200
    assert {d.path for d in w.damaged.values()} <= {i["path"] for i in paths.json()["items"]}
    assert w.rest("POST", "/v1/brains/alpha/search", json={"query": "boiler serviced"}).status_code == 200
    alone = w.rest("GET", "/v1/brains/alpha/documents/read", params={"path": w.damaged["note"].path})
    assert alone.status_code == 503 and "damaged_content" in alone.text  # the one document read alone

    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("/mcp", "memory_search", {"query": "boiler serviced", "brain": "alpha"}),
        ("/mcp", "memory_recall", {"query": "boiler serviced", "brain": "alpha"}),
        ("/mcp", "memory_ask", {"query": "boiler serviced", "brain": "alpha"}),
        ("/mcp/gbrain", "brain_list", {}),
        ("/mcp/gbrain", "brain_query", {"query": "pump team"}),
        ("/mcp/gbrain", "brain_search", {"query": "pump team"}),
        ("/mcp/gbrain", "brain_stats", {}),
        ("/mcp/mnemosyne/", "list_items", {"library_uid": w.brain.id}),
        ("/mcp/mnemosyne/", "search", {"query": "pump frame"}),
    ]
    for surface, tool, args in calls:
        err, said = await w.tool(surface, tool, args)
        assert not err, (tool, said)
    err, said = await w.tool("/mcp/gbrain", "brain_get", {"slug": "alpha::people/lead-1"})
    assert err and ("damaged" in str(said) or "missing" in str(said)), said

    notes = w.c.consolidation.notes(w.brain)  # what a consolidation job reads: the damaged note left out
    assert {n.doc.id for n in notes} == {d.id for d in w.sound["note"]}

    thoughts = {d.id for d in w.sound["thought"]}
    every = [w.damaged["thought"].id, *thoughts]
    for tool, args in (
        ("recall", {"userId": USER}),
        ("recall", {"userId": USER, "text": "vault code wall"}),
        ("search", {"userId": USER}),
        ("search", {"userId": USER, "text": "vault code"}),
        ("batch_recall", {"userId": USER, "memoryIds": every}),
    ):
        err, said = await w.tool("/mcp/thoughtmcp", tool, args)
        assert not err and said["success"], (tool, said)
        found = ids_in(said["data"]["memories"])
        assert w.damaged["thought"].id not in found, (tool, said)
        assert found == thoughts, (tool, said)
        if tool == "batch_recall":  # named among those not answered
            assert said["data"]["notFound"] == [w.damaged["thought"].id], said
    bad = {"memoryId": w.damaged["thought"].id, "userId": USER, "salience": 0.9}
    err, said = await w.tool("/mcp/thoughtmcp", "update_memory", bad)  # that one memory alone
    assert err and said["success"] is False and said["code"] == "damaged_content", said
    assert "missing" in said["error"] or "damaged" in said["error"], said


def the_web_ui_lists_around_the_damaged_item(w: World) -> None:
    ui = httpx.Client(base_url=w.base, timeout=120)
    form = ui.get("/ui/sign-in")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    ui.post("/ui/sign-in", data={"credential": TOKEN, "csrf": csrf.group(1), "next": "/ui"})
    for path in ("/ui", "/ui/brains/alpha", "/ui/brains/alpha/search?q=staging+database"):
        assert ui.get(path).status_code == 200, path
    listing = ui.get("/ui/brains/alpha").text
    assert w.damaged["fact"].id in listing  # listed from its record
    alone = ui.get(f"/ui/brains/alpha/items/{w.damaged['fact'].id}")
    assert alone.status_code == 503 and ("missing" in alone.text or "damaged" in alone.text)
