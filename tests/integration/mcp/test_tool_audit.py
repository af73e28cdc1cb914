"""The MCP audit reads a call's validated arguments, never its raw ones, and a failing audit never
turns a successful mutation into an error."""

from __future__ import annotations

from typing import Any

import pytest

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
