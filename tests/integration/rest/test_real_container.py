"""The store protocol on the real embedded container (SQLite + ONNX): searchable, durable."""

from __future__ import annotations

import base64
from pathlib import Path

from fastapi.testclient import TestClient

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.integration.rest.helpers import assert_problem, docs_url, put

NOTE = b"# Sourdough\nFeed the starter with rye flour twice a day before baking bread."


def _close(container: Container) -> None:
    for adapter in (container.adapters.records, container.adapters.chunks):
        close = getattr(adapter, "close", None)
        if close is not None:
            close()


def test_store_writes_are_searchable_and_survive_restart(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = build_container(settings)
    with TestClient(create_app(first), base_url="http://localhost") as client:
        brain = client.post("/v1/brains", json={"name": "Kitchen"}).json()
        assert put(client, "kitchen", "memory/global/sourdough.md", NOTE).status_code == 204
        ops = [
            {
                "type": "write",
                "path": "memory/global/tea.md",
                "content_base64": base64.b64encode(b"# Tea\nGreen tea.").decode(),
            },
            {"type": "delete", "path": "memory/global/nothing.md"},
        ]
        assert_problem(
            client.post(docs_url("kitchen", "/batch-ops"), json={"reason": "r", "ops": ops}), 404, "not_found"
        )
        hits = client.post(
            "/v1/brains/kitchen/search", json={"query": "how do I feed a sourdough starter"}
        ).json()
        assert hits["hits"][0]["path"] == "memory/global/sourdough.md"
    _close(first)

    second = build_container(settings)
    try:
        with TestClient(create_app(second), base_url="http://localhost") as client:
            assert client.get(f"/v1/brains/{brain['id']}").json()["slug"] == "kitchen"
            read = client.get(docs_url("kitchen", "/read"), params={"path": "memory/global/sourdough.md"})
            assert read.content == NOTE
            assert (
                client.head(docs_url("kitchen"), params={"path": "memory/global/tea.md"}).status_code == 404
            )
            hits = client.post("/v1/brains/kitchen/search", json={"query": "rye flour starter"}).json()[
                "hits"
            ]
            assert [h["path"] for h in hits] == ["memory/global/sourdough.md"]
    finally:
        _close(second)
