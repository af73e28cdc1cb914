"""The API function driven with API Gateway HTTP API v2 events: REST and MCP across many warm
invocations of one handler (the Mangum lifespan trap), on the fake adapters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.entrypoints.aws_lambda import Handler, api_handler
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.container import fake_container

MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def handler(tmp_path: Path) -> tuple[Handler, list[Container]]:
    built: list[Container] = []

    def make() -> Container:
        built.append(fake_container(tmp_path, backend="aws"))
        return built[-1]

    return api_handler(make), built


def rpc(h: Handler, method: str, params: dict[str, Any], n: int, version: str = "2025-11-25") -> Any:
    headers = {**MCP_HEADERS, "mcp-protocol-version": version}
    body = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
    response = h(http_event("POST", "/mcp", body=json.dumps(body), headers=headers), LambdaContext())
    assert response["statusCode"] == 200, body_of(response)
    return json.loads(body_of(response))


def test_rest_routes_answer_over_many_warm_invocations(tmp_path: Path) -> None:
    h, built = handler(tmp_path)
    assert json_of(h(http_event("GET", "/healthz"), LambdaContext()))["status"] == "ok"
    created = h(http_event("POST", "/v1/brains", body={"name": "Team"}), LambdaContext())
    assert created["statusCode"] == 201
    slug = json_of(created)["slug"]
    for i in range(12):
        put = h(
            http_event(
                "PUT",
                f"/v1/brains/{slug}/documents",
                query={"path": f"memory/global/n{i}.md"},
                body=f"Note {i}: the boiler is serviced in March.".encode(),
                headers={"content-type": "application/octet-stream"},
            ),
            LambdaContext(),
        )
        assert put["statusCode"] == 204, body_of(put)
    found = json_of(
        h(http_event("POST", f"/v1/brains/{slug}/search", body={"query": "boiler"}), LambdaContext())
    )
    assert len(found["hits"]) == 10
    missing = h(http_event("GET", "/v1/brains/nope"), LambdaContext())
    assert missing["statusCode"] == 404 and missing["headers"]["content-type"] == "application/problem+json"
    assert len(built) == 1  # one container for the execution environment


def test_mcp_over_many_warm_invocations_with_the_api_gateway_host(tmp_path: Path) -> None:
    h, _ = handler(tmp_path)
    init = rpc(h, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}, 1)  # fmt: skip
    assert init["result"]["serverInfo"]["name"] == "cairn"
    tools = rpc(h, "tools/list", {}, 2)["result"]["tools"]
    assert "memory_extract" in {t["name"] for t in tools}
    made = rpc(h, "tools/call", {"name": "memory_create_brain", "arguments": {"name": "Ops"}}, 3)
    assert made["result"]["structuredContent"]["slug"] == "ops"
    for i in range(10):
        note = {"name": "memory_remember", "arguments": {"content": f"Runbook {i}: restart the queue."}}
        assert not rpc(h, "tools/call", note, 10 + i)["result"].get("isError")
    hits = rpc(h, "tools/call", {"name": "memory_search", "arguments": {"query": "restart queue"}}, 99)
    assert len(hits["result"]["structuredContent"]["hits"]) == 10


def test_a_malformed_mcp_body_is_a_json_rpc_error_and_the_next_call_still_works(tmp_path: Path) -> None:
    h, _ = handler(tmp_path)
    bad = h(http_event("POST", "/mcp", body="{not json", headers=MCP_HEADERS), LambdaContext())
    assert bad["statusCode"] == 400 and "error" in json.loads(body_of(bad))
    assert rpc(h, "tools/list", {}, 1)["result"]["tools"]


def test_each_invocation_emits_metrics_and_never_logs_the_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h, _ = handler(tmp_path)
    secret = "Bearer sk-do-not-log-me"
    for _ in range(2):
        h(http_event("GET", "/healthz", headers={"authorization": secret}), LambdaContext())
    out = capsys.readouterr().out
    emf = [json.loads(line) for line in out.splitlines() if line.startswith("{") and "_aws" in line]
    names = [m["Name"] for e in emf for m in e["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert names.count("Invocations") == 2  # (ColdStart: once per process, whichever test is first)
    assert secret not in out


def test_healthz_shows_the_scheduled_sweeps_last_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API function runs no sweep: its /healthz reads the report the job task function's sweep
    kept in its record, counts and when it was made, naming no brain."""
    from datetime import datetime

    from cairn.bootstrap import build_container, index_sweeper
    from cairn.config import Settings
    from cairn.ports.records import Item
    from cairn.services import maintenance
    from cairn.services.repositories import documents_pk
    from tests.fakes.container import fake_adapters

    monkeypatch.setattr(maintenance, "READ_EVERY_S", 0.0, raising=False)  # each /healthz reads it again
    settings = Settings(data_dir=tmp_path / "data", backend="aws")
    adapters = fake_adapters()
    sweeper = build_container(settings, adapters)  # the job task function's, on the same stores
    h = api_handler(lambda: build_container(settings, adapters))
    assert "maintenance" not in json_of(h(http_event("GET", "/healthz"), LambdaContext()))

    brain = sweeper.brains.create("Team", slug="team")
    sweeper.documents.write(brain, "memories/fact/pump.md", b"The pump runs at 4 bar.")
    adapters.records.put(Item(documents_pk(brain.id), "memory-counts", {"over": True, "at": 0.0}))
    sweeper.documents.repo.counts.now = lambda: 60.0  # the retry not due: the mark stays
    index_sweeper(sweeper).tick()
    health = json_of(h(http_event("GET", "/healthz"), LambdaContext()))
    assert "maintenance" in health, health  # the API container ran no sweep of its own
    kept = sweeper.health.maintenance.last() if sweeper.health.maintenance else None
    assert kept is not None and kept.swept_at is not None
    assert health["status"] == "ok"
    assert health["maintenance"] == {
        "counts_over": 1,
        "counts_building": 0,
        "entries_building": 0,
        "deletions_settling": 0,
        "concept_reach_to_do": 0,
        "concept_reach_done": 1,
        "image_refs_to_do": 0,
        "image_refs_done": 1,
        "swept_at": kept.swept_at,
    }
    assert datetime.fromisoformat(health["maintenance"]["swept_at"]).tzinfo is not None
    assert brain.id not in str(health)

    adapters.records.put(Item("maintenance", "last", {"swept_at": 7, "counts": {"counts_over": "x"}}))
    damaged = h(http_event("GET", "/healthz"), LambdaContext())  # left out, never a 500
    assert damaged["statusCode"] == 200 and "maintenance" not in json_of(damaged)
