"""Names and ids containing "/" on zengram's HTTP API: the wrapper sends them encoded (`%2F`), the
server decodes the path before routing, and every route that takes a name or id still finds it.
A line break in a name, id or path is routed as any other character. A path no route serves
answers in zengram's error style, with its x-request-id, like every other
zengram error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import LiveServer

KEY = {"x-api-key": "any-key"}


@pytest.fixture
def http(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{live.base}/zengram", headers=KEY, timeout=30) as client:
        yield client


def stored(http: httpx.Client, **memory: Any) -> str:
    response = http.post("/memory", json={"source_agent": "claude-code", **memory})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_an_entity_whose_name_holds_a_slash_is_found_with_its_memories(http: httpx.Client) -> None:
    memory = stored(http, type="fact", content="The CI/CD pipeline deploys on merge", client_id="ci/cd")
    other = stored(http, type="event", content="Ops paged twice", client_id="ops/memories")

    entity = http.get("/entities/ci%2Fcd")
    linked = http.get("/entities/ci%2Fcd/memories", params={"limit": 5})
    # A name ending in "/memories" is the entity itself when the "/" is encoded.
    tricky = http.get("/entities/ops%2Fmemories")
    tricky_links = http.get("/entities/ops%2Fmemories/memories")

    assert entity.status_code == 200 and entity.json()["canonical_name"] == "ci/cd"
    assert entity.headers["x-request-id"]
    assert linked.json()["entity"] == "ci/cd" and [m["memory_id"] for m in linked.json()["memory_links"]] == [
        memory
    ]
    assert tricky.json()["canonical_name"] == "ops/memories" and tricky.json()["entity_type"] == "client"
    assert [m["memory_id"] for m in tricky_links.json()["memory_links"]] == [other]


@pytest.mark.parametrize(
    ("method", "path", "error"),
    [
        ("GET", "/entities/no%2Fsuch", "Entity not found"),
        ("GET", "/entities/no%2Fsuch/memories", "Entity not found"),
        ("PATCH", "/memory/mem%2Fnone", "Memory not found"),
        ("DELETE", "/memory/mem%2Fnone", "Memory not found"),
        ("GET", "/consolidate/job/job%2Fnone", "Job not found or expired"),
        # A line break in a name or id routes as Express routes it, not to the framework's 404.
        ("GET", "/entities/no%0Asuch", "Entity not found"),
        ("PATCH", "/memory/mem%0Anone", "Memory not found"),
        ("GET", "/consolidate/job/job%0D%0Anone", "Job not found or expired"),
    ],
)
def test_a_missing_name_or_id_with_a_slash_is_zengrams_404(
    http: httpx.Client, method: str, path: str, error: str
) -> None:
    stored(http, type="event", content="the first memory makes the brain")
    body = {"importance": "high"} if method == "PATCH" else None

    response = http.request(method, path, json=body, headers={"x-request-id": "req-7"})

    assert response.status_code == 404 and response.json() == {"error": error}
    assert response.headers["x-request-id"] == "req-7"


@pytest.mark.parametrize(
    ("method", "path", "error"),
    [
        ("GET", "/nothing/here", "Cannot GET /nothing/here"),
        ("PUT", "/memory", "Cannot PUT /memory"),
        ("POST", "/stats", "Cannot POST /stats"),
        ("GET", "/nothing%0Ahere", "Cannot GET /nothing\\x0ahere"),  # a line break quoted as its escape
    ],
)
def test_a_path_no_route_serves_answers_in_zengrams_style(
    http: httpx.Client, method: str, path: str, error: str
) -> None:
    response = http.request(method, path)

    assert response.status_code == 404 and response.json() == {"error": error}
    assert response.headers["x-request-id"]


class WithoutRawPath:
    """The app as Mangum runs it on AWS: the scope has the decoded path and no raw path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, "raw_path": None}, receive, send)


def test_without_the_raw_path_a_slashed_name_is_still_found(tmp_path: Path) -> None:
    app = WithoutRawPath(create_app(fake_container(tmp_path)))
    with TestClient(app, base_url="http://localhost", headers=KEY) as client:
        made = client.post(
            "/zengram/memory",
            json={
                "type": "event",
                "content": "Deploys run nightly",
                "client_id": "ci/cd",
                "source_agent": "a",
            },
        )
        entity = client.get("/zengram/entities/ci%2Fcd")
        linked = client.get("/zengram/entities/ci%2Fcd/memories")

    assert entity.json()["canonical_name"] == "ci/cd"
    assert [m["memory_id"] for m in linked.json()["memory_links"]] == [made.json()["id"]]
