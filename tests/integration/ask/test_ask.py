"""memory_ask and POST /ask: retrieval, streamed answer, citations, errors, progress notifications."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp import Client

from cairn.ports.generator import Delta, GenerationError
from cairn.services.documents.rebuilding import Progress
from tests.fakes.generator import ScriptedGenerator
from tests.integration.mcp.conftest import LiveServer, error, ok, text

pytestmark = pytest.mark.anyio


def seed(server: LiveServer) -> None:
    c = server.container
    brain = c.brains.create("Notes", slug="notes")
    c.documents.write(brain, "memory/global/run.md", b"I finished the 10k route in under 55 minutes.")
    c.documents.write(brain, "memory/global/tea.md", b"Green tea is best steeped at 80 degrees.")


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


async def test_progress_notifications_carry_each_delta(live: LiveServer) -> None:
    seed(live)
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with Client(live.url) as client:
        result = await client.call_tool(
            "memory_ask",
            {"query": "how long did the 10k route take", "brain": "notes"},
            progress_callback=on_progress,
        )
    payload = ok(result)
    assert [p for p, _ in seen] == list(range(len(seen))) and seen  # 0, 1, 2, … one per delta
    assert "".join(m or "" for _, m in seen) == payload["answer"]
    assert "55 minutes" in payload["answer"]
    cite = payload["citations"][0]
    assert cite["type"] == "citation"
    assert payload["answer"][cite["answer_start"] : cite["answer_end"]] == cite["quote"]
    assert {r["document_id"] for r in payload["retrieved"]} >= {cite["document_id"]}
    assert all(
        set(r) == {"chunk_id", "document_id", "brain", "score", "preview"} for r in payload["retrieved"]
    )
    assert {cite["brain"]} | {r["brain"] for r in payload["retrieved"]} == {"notes"}


async def test_no_progress_without_a_token(live: LiveServer) -> None:
    seed(live)
    async with Client(live.url) as client:
        result = await client.call_tool("memory_ask", {"query": "green tea temperature", "brain": "notes"})
    assert "80 degrees" in ok(result)["answer"]


async def test_a_stream_error_is_a_text_only_error_with_retryable(live: LiveServer) -> None:
    seed(live)
    live.container.ask.generator = ScriptedGenerator(
        [Delta("Partial"), GenerationError("generation_timeout", "slow")]
    )
    async with Client(live.url) as client:
        result = await client.call_tool("memory_ask", {"query": "tea", "brain": "notes"})
    assert result.is_error and result.structured_content is None
    body = json.loads(text(result))
    assert body == {"code": "generation_timeout", "message": "slow", "retryable": True}


async def test_bad_input_is_refused(live: LiveServer) -> None:
    seed(live)
    async with Client(live.url) as client:
        assert error(await client.call_tool("memory_ask", {"query": ""}))["code"] == "validation_error"
        assert (
            error(await client.call_tool("memory_ask", {"query": "x", "top_k": 51}))["code"]
            == "validation_error"
        )
        assert (
            error(await client.call_tool("memory_ask", {"query": "x", "brain": "nope"}))["code"] == "no_brain"
        )


async def test_rest_ask_streams_events_in_order(live: LiveServer) -> None:
    seed(live)
    async with httpx.AsyncClient(base_url=live.base) as http:
        response = await http.post("/v1/brains/notes/ask", json={"query": "how long did the 10k route take"})
        bad = await http.post("/v1/brains/notes/ask", json={"query": ""})
        blank = await http.post("/v1/brains/notes/ask", json={"query": " \t\n "})  # a 400, not a cut stream
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    kinds = [k for k, _ in events]
    assert kinds[0] == "retrieve" and kinds[-1] == "done"
    assert set(kinds[1:-1]) <= {"answer_delta", "citation"} and "answer_delta" in kinds
    answer = "".join(d["delta"] for k, d in events if k == "answer_delta")
    assert events[-1][1]["answer"] == answer and events[-1][1]["model"] == "extractive"
    for kind, data in events:
        if kind == "citation":
            assert answer[data["answer_start"] : data["answer_end"]] == data["quote"]
    assert bad.status_code == 400 and bad.json()["code"] == "validation_error"
    assert blank.status_code == 400 and "not only spaces" in blank.json()["detail"]


async def test_a_retrieval_that_fails_once_the_stream_began_is_an_error_event(live: LiveServer) -> None:
    seed(live)
    brain = live.container.brains.get("notes")
    live.container.repair.rebuilding.mark(brain.id, Progress(total=10))  # its index being rebuilt
    try:
        async with httpx.AsyncClient(base_url=live.base) as http:
            response = await http.post("/v1/brains/notes/ask", json={"query": "tea"})
    finally:
        live.container.repair.rebuilding.unmark(brain.id)
    events = sse_events(response.text)
    assert response.status_code == 200 and [k for k, _ in events] == ["error"]
    assert events[0][1]["code"] == "unavailable" and events[0][1]["retryable"] is True


async def test_rest_ask_error_event_ends_the_stream(live: LiveServer) -> None:
    seed(live)
    live.container.ask.generator = ScriptedGenerator([GenerationError("generation_failed", "model said no")])
    async with httpx.AsyncClient(base_url=live.base) as http:
        response = await http.post("/v1/brains/notes/ask", json={"query": "tea"})
    events = sse_events(response.text)
    assert [k for k, _ in events] == ["retrieve", "error"]
    assert events[-1][1] == {"code": "generation_failed", "message": "model said no", "retryable": False}


async def test_retrieved_passages_are_scored_on_memory_searchs_calibrated_scale(live: LiveServer) -> None:
    seed(live)
    query = {"query": "green tea temperature", "brain": "notes"}
    async with Client(live.url) as client:
        asked = ok(await client.call_tool("memory_ask", query))
        searched = ok(await client.call_tool("memory_search", query))
    top, hit = asked["retrieved"][0], searched["hits"][0]
    assert top["chunk_id"] == hit["chunk_id"]
    assert top["score"] == pytest.approx(hit["score"]) == pytest.approx(hit["component_scores"]["relevance"])
    scores = [r["score"] for r in asked["retrieved"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
