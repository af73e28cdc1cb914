"""An item is searchable only once its ingest completed: queued, processing and failed items are
listed with that status and never found. Re-ranking through a loopback `/v1/rerank` server: used
and named when it answers, the fused order (and `reranker_used: false`) when it fails; the same
server orders the canonical memory_search."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import CairnError
from cairn.services.mnemosyne.libraries import Library
from cairn.services.mnemosyne.library_search import SearchRequest
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import LiveServer, ok, start_server
from tests.integration.mnemosyne.conftest import MANUAL, NOVEL, body, mnemosyne, stock
from tests.support.loopback import loopback

pytestmark = pytest.mark.anyio
LONG = NOVEL + "\n\n" + "Kitty coughed at Longbourn while the Bennet sisters argued. " * 40


def library(c: Container) -> Library:
    return c.libraries.describe(c.brains.create("Novels", slug="novels").id, library_type="fiction")


def statuses(c: Container, lib: Library) -> dict[str, str]:
    return {i.path: i.embedding_status for i in c.libraries.items([lib], limit=50, offset=0)}


def found(c: Container, lib: Library, query: str) -> set[str]:
    outcome = c.library_search.search(SearchRequest(query=query, libraries=[lib], rerank=False))
    return {cand.document.path for cand in outcome.candidates}


def test_a_queued_item_is_listed_but_never_found_until_it_completes(tmp_path: Path) -> None:
    c = fake_container(tmp_path, ingest_queue_bytes=1000)
    lib = library(c)
    small = c.ingest.ingest_bytes(lib.brain, MANUAL.encode(), name="pump.md", path="pump.md")
    queued = c.ingest.ingest_bytes(lib.brain, LONG.encode(), name="novel.md", path="novel.md")

    assert small.status == "completed" and queued.status == "queued"
    assert statuses(c, lib) == {"novel.md": "queued", "pump.md": "completed"}
    assert "novel.md" not in found(c, lib, "Kitty coughed at Longbourn")  # nothing of it is live

    assert c.jobs.run_pending() == 1
    assert statuses(c, lib) == {"novel.md": "completed", "pump.md": "completed"}
    assert "novel.md" in found(c, lib, "Kitty coughed at Longbourn")
    item = next(i for i in c.libraries.items([lib], limit=50, offset=0) if i.path == "novel.md")
    assert item.chunk_count > 1 and item.uid == queued.document_id


def test_a_failing_ingest_is_failed_with_its_reason_and_a_retry_completes_it(tmp_path: Path) -> None:
    c = fake_container(tmp_path, ingest_queue_bytes=1000)
    lib = library(c)
    seen: list[str] = []
    real = c.ingest.ingest_bytes

    def broken(*args: Any, **kwargs: Any) -> Any:
        seen.append(statuses(c, lib)["novel.md"])  # what list_items says while the job runs
        raise CairnError("the extractor choked")

    queued = c.ingest.ingest_bytes(lib.brain, LONG.encode(), name="novel.md", path="novel.md")
    c.ingest.ingest_bytes = broken  # type: ignore[method-assign]
    c.jobs.run_pending()
    c.ingest.ingest_bytes = real  # type: ignore[method-assign]

    assert seen and set(seen) == {"processing"}  # every attempt, while it runs
    assert statuses(c, lib) == {"novel.md": "failed"}
    pending = c.libraries.status.get(lib.uid, queued.document_id)
    assert pending is not None and pending.error == "the extractor choked"
    assert "novel.md" not in found(c, lib, "Kitty coughed")

    again = c.ingest.ingest_bytes(lib.brain, LONG.encode(), name="novel.md", path="novel.md")
    assert again.status == "queued" and statuses(c, lib) == {"novel.md": "queued"}
    c.jobs.run_pending()
    assert statuses(c, lib) == {"novel.md": "completed"} and "novel.md" in found(c, lib, "Kitty coughed")


def test_an_attempt_failing_after_another_completed_the_item_leaves_it_completed(tmp_path: Path) -> None:
    """A stale attempt (handed back by a stopping process, or past its lease) still running when
    another attempt of its job completes the item: its failure does not mark the item failed."""
    c = fake_container(tmp_path, ingest_queue_bytes=1000)
    lib = library(c)
    real = c.ingest.ingest_bytes

    def completed_elsewhere_then_failed(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # the other attempt's whole ingest: the document, its record removed
        raise CairnError("the stale attempt choked")

    c.ingest.ingest_bytes(lib.brain, LONG.encode(), name="novel.md", path="novel.md")
    c.ingest.ingest_bytes = completed_elsewhere_then_failed  # type: ignore[method-assign]
    c.jobs.run_pending()
    c.ingest.ingest_bytes = real  # type: ignore[method-assign]

    assert statuses(c, lib) == {"novel.md": "completed"}
    assert c.libraries.status.pending(lib.uid) == []
    assert "novel.md" in found(c, lib, "Kitty coughed")


# -- re-ranking ---------------------------------------------------------------------------------


class Reranking(BaseHTTPRequestHandler):
    """A `/v1/rerank` server: reverses the documents' order, or fails with `status`."""

    status: ClassVar[int] = 200
    asked: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).asked.append(sent)
        if self.status != 200:
            self.send_response(self.status)
            self.end_headers()
            return
        n = len(sent["documents"])
        results = [{"index": i, "relevance_score": (i + 1) / n} for i in reversed(range(n))]
        payload = json.dumps({"results": results, "model": sent["model"]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def reranker() -> Iterator[str]:
    Reranking.status, Reranking.asked = 200, []
    with loopback(Reranking) as base:
        yield f"{base}/v1"


@pytest.fixture
def live(tmp_path: Path, reranker: str) -> Iterator[LiveServer]:
    yield from start_server(
        tmp_path,
        token="sekret-owner-token",
        reranker="http",
        reranker_base_url=reranker,
        reranker_model="bge-reranker-test",
        reranker_max_retries=0,
    )


async def test_search_re_ranks_through_the_configured_server_and_falls_back_when_it_fails(
    live: LiveServer,
) -> None:
    stock(live.container)
    query = {"query": "Bennet family Netherfield", "search_types": ["fulltext", "graph"]}
    async with mnemosyne(live) as m:
        fused = body(await m.call_tool("search", {**query, "rerank": False}))
        reranked = body(await m.call_tool("search", query))
        Reranking.status = 500
        fallback = body(await m.call_tool("search", query))

    assert fused["reranker_used"] is False and fused["reranker_model"] is None
    assert reranked["reranker_used"] is True and reranked["reranker_model"] == "bge-reranker-test"
    assert len(fused["candidates"]) >= 2
    order = [c["chunk_uid"] for c in fused["candidates"]]
    assert [c["chunk_uid"] for c in reranked["candidates"]] == list(reversed(order))
    assert reranked["candidates"][0]["score"] == 1.0
    sent = Reranking.asked[0]
    assert sent["query"] == query["query"] and len(sent["documents"]) == len(order)
    assert "instruction" not in sent  # no profile has a measured one (docs/MNEMOSYNE_PROFILES.md)
    assert fallback["reranker_used"] is False and fallback["reranker_model"] is None
    assert [c["chunk_uid"] for c in fallback["candidates"]] == order


async def test_memory_search_re_ranks_through_the_same_server(live: LiveServer) -> None:
    brain = live.container.brains.create("Kitchen", slug="kitchen")
    notes = {
        "kettle": "The kettle is descaled on Fridays.",
        "fridge": "The kettle sits by the fridge.",
        "toaster": "Crumbs collect under the kettle and the toaster.",
    }
    for name, text in notes.items():
        live.container.documents.write(brain, f"notes/{name}.md", text.encode())
    query = {"brain": "kitchen", "query": "when is the kettle descaled", "top_k": 3}
    configured, live.container.search.reranker = live.container.search.reranker, None
    async with mnemosyne(live, path="/mcp") as canonical:
        plain = ok(await canonical.call_tool("memory_search", query))["hits"]
        live.container.search.reranker = configured  # as `cairn serve` built it: the loopback server
        reranked = ok(await canonical.call_tool("memory_search", query))["hits"]

    assert configured is not None and Reranking.asked[-1]["query"] == query["query"]
    assert [h["path"] for h in reranked] == [h["path"] for h in reversed(plain)]
    assert [h["score"] for h in reranked] == sorted((h["score"] for h in reranked), reverse=True)
    assert reranked[0]["component_scores"]["rerank"] == 1.0
