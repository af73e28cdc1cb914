"""memory_extract, memory_reflect, memory_consolidate and queued ingest over real HTTP, through the
official MCP client; the jobs they queue are then worked and followed through GET /v1/jobs/{id}."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, error, ok, start_server, text

pytestmark = pytest.mark.anyio

MESSAGE_KEYS = {"id", "session_id", "role", "content", "created_at"}
CHAT = [
    {"role": "user", "content": "I moved to Lisbon last spring and I love the tiles there."},
    {"role": "assistant", "content": "That sounds lovely. How is the new job?"},
    {"role": "user", "content": "I started working at a bakery called Forno Azul."},
]


async def _session(live: LiveServer, brain: str) -> str:
    async with httpx.AsyncClient(base_url=live.base) as http:
        created = await http.post(f"/v1/brains/{brain}/sessions", json={"title": "catch-up"})
        assert created.status_code == 201
        return str(created.json()["id"])


def _facts(live: LiveServer, slug: str) -> list:
    brain = live.container.brains.get(slug)
    return [
        d for d in live.container.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact"
    ]


async def test_extract_in_session_mode_appends_then_extracts(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        sid = await _session(live, "chat")
        result = await client.call_tool(
            "memory_extract", {"messages": CHAT, "session_id": sid, "actor_id": "helper"}
        )
    payload = ok(result)
    assert payload["mode"] == "session" and len(payload["messages"]) == 3
    assert all(set(m) == MESSAGE_KEYS and m["session_id"] == sid for m in payload["messages"])
    assert [m["content"] for m in payload["messages"]] == [m["content"] for m in CHAT]
    assert "extraction queued" in text(result)

    assert live.container.jobs.run_pending() == 1
    facts = _facts(live, "chat")
    assert facts and all(f.path.startswith("memory/agent/helper/") for f in facts)
    assert all(f.metadata["origins"] == sid for f in facts)
    assert any("Forno Azul" in f.title for f in facts)


async def test_extract_in_transcript_mode_creates_a_transcript_document(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        payload = ok(await client.call_tool("memory_extract", {"messages": CHAT}))
    doc = payload["document"]
    assert payload["mode"] == "transcript" and doc["source"] == "extract"
    assert doc["path"].startswith("transcripts/") and doc["content_type"] == "text/markdown"
    live.container.jobs.run_pending()
    assert any(f.metadata["origins"] == doc["id"] for f in _facts(live, "chat"))


@pytest.mark.parametrize(
    "args",
    [
        {"messages": []},
        {"messages": [{"role": "robot", "content": "hi"}]},
        {"messages": [{"role": "user", "content": ""}]},
        {"messages": [{"role": "user", "content": "hi"}], "session_id": "ses_unknown"},
    ],
)
async def test_bad_extract_input_is_a_tool_error_and_changes_nothing(live: LiveServer, args: dict) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        before = live.snapshot()
        body = error(await client.call_tool("memory_extract", args))
    assert body["code"] in {"validation_error", "not_found"}
    assert live.snapshot() == before and live.container.jobs.run_pending() == 0


async def test_a_session_said_only_in_headings_reflects_to_nothing_over_mcp_and_rest(
    live: LiveServer,
) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        sids = [await _session(live, "chat") for _ in range(2)]
        async with httpx.AsyncClient(base_url=live.base) as http:
            for sid in sids:
                said = {"role": "user", "content": "# Weekly planning notes"}
                assert (
                    await http.post(f"/v1/brains/chat/sessions/{sid}/messages", json=said)
                ).status_code == 201
            rest = await http.post(f"/v1/brains/chat/sessions/{sids[0]}/reflect")
        payload = ok(await client.call_tool("memory_reflect", {"session_id": sids[1]}))
    assert rest.status_code == 200, rest.text
    assert payload["reflection_attempted"] is True and payload.get("reflection") is None


async def test_reflect_closes_the_session_and_reports_in_the_seed_shape(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        sid = await _session(live, "chat")
        ok(await client.call_tool("memory_extract", {"messages": CHAT, "session_id": sid}))
        result = await client.call_tool("memory_reflect", {"session_id": sid})
        again = ok(await client.call_tool("memory_reflect", {"session_id": sid}))
        missing = error(await client.call_tool("memory_reflect", {"session_id": "ses_nope"}))
    payload = ok(result)
    assert payload["reflection_status"] == "completed" and payload["reflection_attempted"] is True
    reflection = payload["reflection"]
    assert set(reflection) <= {"outcome", "should_record_episode", "path", "retry_feedback"}
    assert reflection["path"].startswith("memory/global/episodes/") and reflection["path"].endswith(
        f"{sid}.md"
    )
    summary = text(result)
    for part in (reflection["outcome"], str(reflection["should_record_episode"]).lower(), reflection["path"]):
        assert part in summary
    assert re.search(r"ended_at=\d{4}-\d\d-\d\dT", summary) and payload["ended_at"] in summary
    assert again["reflection_attempted"] is False and again["reflection"] == reflection
    assert missing["code"] == "not_found"
    brain = live.container.brains.get("chat")
    assert live.container.documents.exists(brain, reflection["path"]) is reflection["should_record_episode"]
    async with httpx.AsyncClient(base_url=live.base) as http:
        closed = (await http.get(f"/v1/brains/chat/sessions/{sid}")).json()["session"]
        late = await http.post(
            f"/v1/brains/chat/sessions/{sid}/messages", json={"role": "user", "content": "x"}
        )
    assert closed["status"] == "closed" and late.status_code == 409


async def test_consolidate_queues_a_job_that_can_be_followed(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        for note in ("Ana likes jazz.", "Ana plays the cello.", "Ana lives in Porto."):
            ok(await client.call_tool("memory_remember", {"content": note}))
        result = await client.call_tool("memory_consolidate", {})
    job = ok(result)["result"]
    assert job["kind"] == "consolidate" and job["status"] == "queued" and job["job_id"] in text(result)
    live.container.jobs.run_pending()
    async with httpx.AsyncClient(base_url=live.base) as http:
        status = (await http.get(f"/v1/jobs/{job['job_id']}")).json()
        summary = await http.get(
            "/v1/brains/chat/documents/read", params={"path": "memory/global/_summary.md"}
        )
    assert status["status"] == "completed" and status["progress"] == 1.0
    assert set(status["result"]) == {"merge", "promote", "prune", "summaries"}
    assert summary.status_code == 200 and "Ana plays the cello." in summary.text


async def test_rest_routes_for_extract_reflect_and_consolidate(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
    sid = await _session(live, "chat")
    async with httpx.AsyncClient(base_url=live.base) as http:
        session_mode = await http.post("/v1/brains/chat/extract", json={"messages": CHAT, "session_id": sid})
        transcript = await http.post("/v1/brains/chat/extract", json={"messages": CHAT[:1]})
        bad = await http.post("/v1/brains/chat/extract", json={"messages": []})
        jobs = [(await http.get(f"/v1/jobs/{r.json()['job_id']}")).json() for r in (session_mode, transcript)]
        reflected = await http.post(f"/v1/brains/chat/sessions/{sid}/reflect")
        queued = await http.post("/v1/brains/chat/consolidate")
    assert session_mode.status_code == 202 and session_mode.json()["mode"] == "session"
    assert transcript.status_code == 202 and transcript.json()["document"]["source"] == "extract"
    assert [j["kind"] for j in jobs] == ["extract", "extract"]
    assert all(j["status"] in ("queued", "running", "completed") for j in jobs)
    assert bad.status_code == 400 and bad.headers["content-type"].startswith("application/problem+json")
    assert reflected.status_code == 200 and reflected.json()["reflection_status"] == "completed"
    assert queued.status_code == 202 and queued.json()["kind"] == "consolidate"


@pytest.fixture
def small_queue(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, ingest_queue_bytes=256)


async def test_a_large_file_ingest_answers_queued_and_completes_through_the_runner(
    small_queue: LiveServer,
) -> None:
    live = small_queue
    (live.ingest_root / "manual.md").write_text("# Manual\n\n" + "Check the brake fluid monthly. " * 40)
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Docs", "slug": "docs"}))
        payload = ok(await client.call_tool("memory_ingest_file", {"path": "manual.md"}))
    assert payload["status"] == "queued" and payload["job_id"] and payload["chunk_count"] == 0
    live.container.jobs.run_pending()
    async with httpx.AsyncClient(base_url=live.base) as http:
        job = (await http.get(f"/v1/jobs/{payload['job_id']}")).json()
        found = (await http.post("/v1/brains/docs/search", json={"query": "brake fluid"})).json()
    assert job["status"] == "completed" and job["result"]["document_id"] == payload["document_id"]
    assert found["hits"][0]["document_id"] == payload["document_id"]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("memory_reflect", {"session_id": ""}),
        ("memory_reflect", {"session_id": "ses_x", "brain": "nope"}),
        ("memory_consolidate", {"brain": "nope"}),
    ],
)
async def test_bad_reflect_and_consolidate_input_is_refused_and_queues_nothing(
    live: LiveServer, tool: str, args: dict
) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Chat", "slug": "chat"}))
        before = live.snapshot()
        body = error(await client.call_tool(tool, args))
    assert body["code"] in {"validation_error", "not_found", "no_brain"}
    assert live.snapshot() == before and live.container.jobs.run_pending() == 0


async def test_rest_memory_routes_refuse_an_unknown_brain(live: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live.base) as http:
        extract = await http.post("/v1/brains/nope/extract", json={"messages": CHAT})
        reflect = await http.post("/v1/brains/nope/sessions/ses_x/reflect")
        consolidate = await http.post("/v1/brains/nope/consolidate")
    assert [r.status_code for r in (extract, reflect, consolidate)] == [404, 404, 404]
    assert live.container.jobs.run_pending() == 0
