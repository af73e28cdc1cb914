"""Behind API Gateway an MCP surface is built, and the MCP SDK imported, on its first call
(entrypoints/mcp/mount.py): the API function's cold import leaves the SDK out, and a REST or health
request never loads it. The tools a caller without a credential may call are declared in the
registry, so authentication knows them before anything is built; each surface's server agrees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp import http as mcp_http
from cairn.entrypoints.mcp.registry import SURFACES, http_paths, public_tools
from tests.fakes.container import fake_container

ROOT = Path(__file__).resolve().parents[3]
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []
    real = mcp_http.surface_endpoints

    def counted(surface: str, container: Any, calls: Any = None) -> Any:
        built.append(surface)
        return real(surface, container, calls)

    monkeypatch.setattr(mcp_http, "surface_endpoints", counted)
    return built


def tools_list(client: TestClient, path: str) -> Any:
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return client.post(path, content=json.dumps(rpc), headers=MCP_HEADERS)


def test_behind_the_gateway_a_surface_is_built_on_its_first_call_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = spy(monkeypatch)
    container = fake_container(tmp_path, backend="aws", allow_open=True)

    with TestClient(create_app(container), base_url="http://localhost") as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/brains").status_code == 200
        assert built == []  # no surface for REST and health
        first = tools_list(client, "/mcp")
        again = tools_list(client, "/mcp")
        zengram = tools_list(client, "/mcp/zengram")

    assert first.status_code == again.status_code == zengram.status_code == 200
    assert {t["name"] for t in first.json()["result"]["tools"]} >= {"memory_search", "memory_remember"}
    assert built == ["canonical", "zengram"]  # each once, when first called


def test_the_embedded_server_builds_every_surface_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = spy(monkeypatch)
    create_app(fake_container(tmp_path))
    assert sorted(built) == sorted(SURFACES)


def test_the_registrys_public_tools_are_each_surfaces_own(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    for surface in SURFACES:
        endpoints = mcp_http.surface_endpoints(surface, container)  # refuses a mismatch
        assert set(endpoints) == set(http_paths(surface))
    assert public_tools() == {"/mcp/mnemosyne": {"get_health"}, "/mcp/mnemosyne/": {"get_health"}}


def test_the_api_functions_cold_import_leaves_the_mcp_sdk_out() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "AWS_"))}
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from lambda_cold_import import LAMBDA_ENV
    finally:
        sys.path.remove(str(ROOT / "bench"))
    env.update(LAMBDA_ENV)
    code = (
        "import sys, functions.api.app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_client_taking_only_json_gets_the_result_of_a_call_that_asks_for_progress(tmp_path: Path) -> None:
    """Progress goes over SSE; a client whose Accept names JSON alone was answered 406 for the
    call with a progress token it got a result for without one."""
    container = fake_container(tmp_path)
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "memory_create_brain",
            "arguments": {"name": "Tea"},
            "_meta": {"progressToken": 1},
        },
    }
    with TestClient(create_app(container), base_url="http://localhost") as client:
        json_only = {**MCP_HEADERS, "accept": "application/json"}
        answered = client.post("/mcp", content=json.dumps(call), headers=json_only)
        streamed = client.post("/mcp", content=json.dumps({**call, "id": 4}), headers=MCP_HEADERS)
    assert answered.status_code == 200 and answered.headers["content-type"].startswith("application/json")
    assert answered.json()["result"]["structuredContent"]["name"] == "Tea"
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
