"""Which brain zengram's API serves (CAIRN_ZENGRAM_BRAIN, a key's only brain, the default) and how
a limited caller is refused (zengram's 429 body with Retry-After)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp_types import CallToolResult

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.models import MemoryType
from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp.registry import build_server
from cairn.services.ingest.inputs import LocalFilePolicy
from tests.fakes.container import fake_container

Z = "/zengram"


def key(container: Container, name: str, brains: list[str] | None = None) -> str:
    created = container.keys.create(name=name, tenant="local", scopes=[READ, WRITE, ADMIN], brains=brains)
    return created.plaintext


def store(client: TestClient, credential: str, content: str) -> Any:
    body = {"type": "event", "content": content, "source_agent": "claude-code"}
    return client.post(f"{Z}/memory", json=body, headers={"x-api-key": credential})


def texts(container: Container, slug: str) -> list[str]:
    brain = container.brains.get(slug)
    return [container.memories.text(d) for d in container.memories.of_type(brain, [MemoryType.event])]


def test_a_key_limited_to_one_brain_stores_there_and_the_setting_wins_otherwise(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="owner-token")
    first = container.brains.create("First", slug="first", visibility="tenant")
    second = container.brains.create("Second", slug="second", visibility="tenant")
    only_second = key(container, "second-only", brains=[second.id])
    any_brain = key(container, "any")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        assert store(client, only_second, "into the second brain").status_code == 201
        assert store(client, any_brain, "into the default brain").status_code == 201

    assert texts(container, "second") == ["into the second brain"]
    assert texts(container, "first") == ["into the default brain"]  # the first brain is the default
    assert first.id != second.id

    configured = fake_container(tmp_path / "configured", token="owner-token", zengram_brain="second")
    configured.brains.create("First", slug="first", visibility="tenant")
    configured.brains.create("Second", slug="second", visibility="tenant")
    with TestClient(create_app(configured), base_url="http://localhost") as client:
        assert store(client, key(configured, "any"), "where the setting says").status_code == 201
    assert texts(configured, "second") == ["where the setting says"] and texts(configured, "first") == []


def test_a_caller_over_its_rate_gets_zengrams_429(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="owner-token", rate_limit_per_s=0.5, rate_limit_burst=2)
    container.brains.create("Shared", slug="shared", visibility="tenant")
    credential = key(container, "limited")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        answers = [client.get(f"{Z}/stats", headers={"x-api-key": credential}) for _ in range(3)]
        write = store(client, credential, "one write too many")

    limited = answers[-1]
    assert answers[0].status_code == 200 and limited.status_code == 429
    body = limited.json()
    assert body["error"].startswith("Rate limit exceeded for read requests. Try again in ")
    assert body["limit"] == 2 and body["window_seconds"] >= 1
    assert int(limited.headers["retry-after"]) >= 1
    assert write.status_code == 429 and "write requests" in write.json()["error"]


@pytest.mark.anyio
async def test_a_read_only_caller_polls_consolidation_over_mcp_and_cannot_run_one(tmp_path: Path) -> None:
    # Over HTTP a read-only key may GET /consolidate/status and /consolidate/job/{id}; the one MCP
    # tool doing all three needs write only when it runs a consolidation.
    container = fake_container(tmp_path, token="owner-token")
    container.brains.create("Shared", slug="shared", visibility="tenant")
    server = build_server("zengram", container, LocalFilePolicy(root=tmp_path, max_bytes=1))
    reader = Principal("local", "key:reader", frozenset({READ}), Via.api_key)
    writer = Principal("local", "key:writer", frozenset({READ, WRITE}), Via.api_key)

    with access.acting_as(reader):
        status = await server.call_tool("brain_consolidate", {"action": "status"})
        missing_job = await server.call_tool("brain_consolidate", {"action": "job", "job_id": "job_none"})
        runs = ({"action": "run", "sync": True}, {})
        refused = [await server.call_tool("brain_consolidate", a) for a in runs]
    with access.acting_as(writer):
        run = await server.call_tool("brain_consolidate", {"action": "run", "sync": True})
        await server.call_tool("brain_consolidate", {"action": "status"})

    assert isinstance(status, CallToolResult) and not status.is_error
    assert isinstance(missing_job, CallToolResult) and missing_job.is_error
    assert "insufficient_scope" not in _text(missing_job)  # the job is looked for, and not found
    for answer in refused:
        assert isinstance(answer, CallToolResult) and answer.is_error
        assert "insufficient_scope" in _text(answer)
    assert isinstance(run, CallToolResult) and not run.is_error
    entries, _ = container.audit.query(tenant="local", limit=100)
    assert [(e.action, e.subject) for e in entries] == [("mcp.brain_consolidate", "key:writer")]


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_writes_through_zengrams_api_are_audited_and_reads_are_not(tmp_path: Path) -> None:
    """zengram's published MCP wrapper writes through this API: its writes must leave the audit
    entries a /v1 route or an MCP tool leaves, naming the caller, the brain and the memory."""
    container = fake_container(tmp_path, token="owner-token")
    shared = container.brains.create("Shared", slug="shared", visibility="tenant")
    credential = key(container, "wrapper")
    headers = {"x-api-key": credential}
    with TestClient(create_app(container), base_url="http://localhost") as client:
        made = store(client, credential, "the billing service moved to PostgreSQL")
        assert made.status_code == 201
        memory_id = made.json()["id"]
        assert client.get(f"{Z}/memory/search", params={"q": "billing"}, headers=headers).status_code == 200
        assert client.get(f"{Z}/stats", headers=headers).status_code == 200
        patched = client.patch(f"{Z}/memory/{memory_id}", json={"importance": "high"}, headers=headers)
        assert patched.status_code == 200
        refused = client.patch(f"{Z}/memory/no-such-id", json={"importance": "high"}, headers=headers)
        assert refused.status_code == 404
        gone = client.request("DELETE", f"{Z}/memory/{memory_id}", json={"reason": "moved"}, headers=headers)
        assert gone.status_code == 200

    entries, _ = container.audit.query(tenant="local", limit=100)
    zengram = [(e.action, e.brain_id, e.target) for e in entries if e.action.startswith("zengram.")]
    assert sorted(zengram) == sorted(
        [
            ("zengram.store", shared.id, memory_id),
            ("zengram.update", shared.id, memory_id),
            ("zengram.delete", shared.id, memory_id),
        ]
    )  # the search, the stats and the refused update left none
    callers = {(e.tenant, e.via) for e in entries if e.action.startswith("zengram.")}
    assert callers == {("local", Via.api_key.value)}
