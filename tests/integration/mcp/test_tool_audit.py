"""The MCP audit reads a call's validated arguments, never its raw ones, and a failing audit never
turns a successful mutation into an error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, call, ok


def _entries(live: LiveServer) -> list[Any]:
    entries, _ = live.container.audit.query(tenant="local", limit=100)
    return entries


@pytest.mark.anyio
async def test_create_brain_with_stray_arguments_succeeds_and_audits_the_new_brain(live: LiveServer) -> None:
    created = ok(await call(live.url, "memory_create_brain", {"name": "x", "brain": 12345}))
    other = ok(await call(live.url, "memory_create_brain", {"name": "y", "brain": created["id"], "path": 5}))

    entries = {e.brain_id: e for e in _entries(live) if e.action == "mcp.memory_create_brain"}
    assert set(entries) == {created["id"], other["id"]}
    assert all(e.target is None for e in entries.values())


@pytest.mark.anyio
async def test_a_failing_audit_does_not_fail_the_mutation(live: LiveServer, monkeypatch: Any) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("audit store down")

    monkeypatch.setattr(live.container.audit, "record", broken)
    created = ok(await call(live.url, "memory_create_brain", {"name": "kept"}))
    assert [b.id for b in live.container.brains.list()] == [created["id"]]


@pytest.mark.anyio
async def test_remember_audits_its_validated_brain_and_path(live: LiveServer) -> None:
    brain = live.container.brains.create("Notes", slug="notes")
    ok(
        await call(
            live.url, "memory_remember", {"content": "# Tea\ngreen", "brain": "notes", "path": "a/tea.md"}
        )
    )
    [entry] = [e for e in _entries(live) if e.action == "mcp.memory_remember"]
    assert (entry.brain_id, entry.target) == (brain.id, "a/tea.md")


@pytest.mark.anyio
async def test_a_refusal_answered_as_a_normal_result_is_not_audited(live: LiveServer) -> None:
    # ThoughtMCP answers a refusal as a normal result, `success: false`, without isError
    async with Client(f"{live.base}/mcp/thoughtmcp") as client:
        made = await client.call_tool(
            "remember",
            {
                "content": "The billing service deploys on Tuesdays",
                "userId": "u",
                "sessionId": "s",
                "primarySector": "semantic",
            },
        )
        empty = await client.call_tool("batch_forget", {"memoryIds": []})
        unknown = await client.call_tool("forget", {"memoryId": "mem_nope", "userId": "u"})
    for result, success in ((made, True), (empty, False), (unknown, False)):
        assert not result.is_error and result.content[0].type == "text"
        assert json.loads(result.content[0].text)["success"] is success
    actions = [e.action for e in _entries(live)]
    assert "mcp.remember" in actions
    assert "mcp.batch_forget" not in actions and "mcp.forget" not in actions
