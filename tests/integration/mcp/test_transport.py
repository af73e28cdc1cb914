"""The /mcp endpoint as HTTP: stateless per-request serving, DNS-rebinding protection that lets
loopback clients and the configured host through, and 405 where stateless mode has nothing to offer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, ok, start_server

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INIT, headers={**JSON_HEADERS, **headers}, timeout=10)


def test_loopback_names_are_allowed(live: LiveServer) -> None:
    port = live.base.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        response = _post(live.url, host=host, origin=f"http://localhost:{port}")
        assert response.status_code == 200, host
        assert response.json()["result"]["serverInfo"]["name"] == "cairn"


def test_a_foreign_host_or_origin_is_refused(live: LiveServer) -> None:
    assert _post(live.url, host="evil.example").status_code == 421
    assert _post(live.url, origin="http://evil.example").status_code == 403


@pytest.fixture
def named(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, host="mcp.example.com", allow_open=True)  # host checks, not auth


def test_the_configured_host_is_allowed(named: LiveServer) -> None:
    assert _post(named.url, host="mcp.example.com").status_code == 200
    assert _post(named.url, host="mcp.example.com:443", origin="https://mcp.example.com").status_code == 200
    assert _post(named.url, host="other.example.com").status_code == 421


@pytest.fixture
def wildcard(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, host="0.0.0.0", allow_open=True)


def test_a_server_bound_to_every_interface_does_not_check_the_host(wildcard: LiveServer) -> None:
    assert _post(wildcard.url, host="10.1.2.3:8080").status_code == 200


def test_a_body_that_says_it_is_not_json_is_refused_as_json_rpc(live: LiveServer) -> None:
    """The SDK answered a missing or other content type with plain text (and refused the upper-case
    spelling of application/json, which media types allow)."""
    for content_type in (None, "text/plain", "application/json-seq", "multipart/form-data"):
        headers = {
            "accept": JSON_HEADERS["accept"],
            **({"content-type": content_type} if content_type else {}),
        }
        refused = httpx.post(live.url, content=json.dumps(INIT), headers=headers, timeout=10)
        assert refused.status_code == 415, content_type
        assert refused.json()["error"] == {
            "code": -32600,
            "message": "Unsupported Media Type: Content-Type must be application/json",
        }
    for content_type in ("Application/JSON", "application/json; charset=utf-8"):
        assert (
            _post(live.url, **{"content-type": content_type}).json()["result"]["serverInfo"]["name"]
            == "cairn"
        )


def test_get_and_delete_are_405_in_stateless_mode(live: LiveServer) -> None:
    get = httpx.get(live.url, headers={"accept": "text/event-stream"}, timeout=10)
    assert get.status_code == 405 and get.headers["allow"] == "POST"
    assert get.json()["error"]["code"] == -32600
    assert httpx.delete(live.url, timeout=10).status_code == 405


def test_the_mcp_routes_stay_out_of_the_openapi_document(live: LiveServer) -> None:
    paths = httpx.get(f"{live.base}/openapi.json", timeout=10).json()["paths"]
    assert not any(p == "/mcp" or p.startswith("/mcp/") for p in paths)


@pytest.mark.anyio
async def test_many_sequential_and_concurrent_calls(live: LiveServer) -> None:
    # Each HTTP request builds and tears down its own session manager: none may leak into the next.
    async with Client(live.url) as client:
        ok(await client.call_tool("memory_create_brain", {"name": "Busy"}))
        for n in range(20):
            ok(await client.call_tool("memory_remember", {"content": f"note number {n}"}))

    counts: list[int] = []

    async def search() -> None:
        async with Client(live.url, mode="legacy") as c:
            counts.append(len(ok(await c.call_tool("memory_search", {"query": "note", "top_k": 50}))["hits"]))

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(search)
    assert counts == [20] * 8


@pytest.mark.parametrize(
    ("message", "answered_id", "said"),
    [
        ({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": []}, 5, "params"),
        ({"jsonrpc": "2.0", "id": 6, "method": "ping", "params": "x"}, 6, "params"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None, "a request's id"),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None, "a request's id"),
    ],
)
def test_a_message_that_is_no_request_is_answered_as_stdio_answers_it(
    live: LiveServer, message: dict[str, object], answered_id: object, said: str
) -> None:
    """-32600 with what is wrong, the request's id where it can be read: not the SDK's -32602 with a
    validation dump, nor (for a null or list id) a 202 that leaves the client waiting."""
    response = httpx.post(live.url, json=message, headers=JSON_HEADERS, timeout=10)

    assert response.status_code == 400
    body = response.json()
    assert body["id"] == answered_id and body["error"]["code"] == -32600
    assert body["error"]["message"].startswith("Invalid Request: ") and said in body["error"]["message"]
