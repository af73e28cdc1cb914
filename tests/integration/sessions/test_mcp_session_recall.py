"""memory_recall's session mode over real HTTP through the official MCP client."""

from __future__ import annotations

import re

import httpx
import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, error, ok, text

pytestmark = pytest.mark.anyio

CHUNK_KEYS = {
    "chunk_id", "document_id", "brain_id", "brain", "path", "title", "score", "content", "metadata",
    "component_scores", "highlights", "created_at", "updated_at",
}  # fmt: skip
NOTES = [
    ("memory/global/tennis.md", "The tennis match is on Sunday at the park."),
    ("memory/global/garden.md", "Water the tomatoes every evening."),
    ("memory/global/chess.md", "The chess club meets on Friday."),
]


async def _session(live: LiveServer, brain: str, *messages: str) -> str:
    async with httpx.AsyncClient(base_url=live.base) as http:
        created = await http.post(f"/v1/brains/{brain}/sessions", json={"title": "chat"})
        sid: str = created.json()["id"]
        for content in messages:
            r = await http.post(
                f"/v1/brains/{brain}/sessions/{sid}/messages", json={"role": "user", "content": content}
            )
            assert r.status_code == 201
    return sid


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_recall_with_a_session_returns_chunks(live: LiveServer, mode: str) -> None:
    async with Client(live.url, mode=mode) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Recall", "slug": "recall"}))
        for path, content in NOTES:
            ok(await client.call_tool("memory_remember", {"content": content, "path": path}))
        sid = await _session(live, "recall", "which match? the tennis one, at the park")
        result = await client.call_tool(
            "memory_recall", {"query": "when is the match", "session_id": sid, "top_k": 2, "scope": "global"}
        )
    payload = ok(result)
    assert set(payload) == {"chunks"} and len(payload["chunks"]) == 2
    top = payload["chunks"][0]
    assert set(top) == CHUNK_KEYS
    assert top["path"] == "memory/global/tennis.md" and top["content"] == NOTES[0][1]
    summary = text(result)
    assert re.match(r"#1 score=\d+\.\d{4} memory/global/tennis\.md\nThe tennis match", summary)
    assert "#2 score=" in summary


async def test_recall_names_the_brain_of_the_session(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "First", "slug": "first"}))
        ok(await client.call_tool("memory_create_brain", {"name": "Second", "slug": "second"}))
        ok(await client.call_tool("memory_remember", {"content": "otters hold hands", "brain": "second"}))
        sid = await _session(live, "second", "tell me about otters")
        found = ok(
            await client.call_tool("memory_recall", {"query": "otters", "session_id": sid, "brain": "second"})
        )
        elsewhere = error(await client.call_tool("memory_recall", {"query": "otters", "session_id": sid}))
    assert [c["content"] for c in found["chunks"]] == ["otters hold hands"]
    assert elsewhere["code"] == "not_found"  # the default brain (the first) does not hold that session


async def test_unknown_session_is_not_found_and_bad_arguments_are_refused(live: LiveServer) -> None:
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Recall"}))
        unknown = error(
            await client.call_tool("memory_recall", {"query": "otter", "session_id": "ses_missing"})
        )
        too_many = error(
            await client.call_tool(
                "memory_recall", {"query": "otter", "session_id": "ses_missing", "top_k": 51}
            )
        )
    assert unknown["code"] == "not_found" and "ses_missing" in unknown["message"]
    assert too_many["code"] == "validation_error"


async def test_recall_output_schema_admits_both_shapes(live: LiveServer) -> None:
    async with Client(live.url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["memory_recall"].output_schema
    assert schema is not None and schema["type"] == "object"
    refs = {arm["$ref"].rsplit("/", 1)[-1] for arm in schema["anyOf"]}
    assert refs == {"SearchResponse", "SessionRecallResponse"}
