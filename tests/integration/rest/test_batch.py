"""POST /documents/batch-ops: flat op sequences, atomicity, limits."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.rest.helpers import assert_problem, docs_url, put

URL = docs_url("notes", "/batch-ops")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def batch(*ops: dict[str, Any], reason: str = "test") -> dict[str, Any]:
    return {"reason": reason, "message": "m", "author": "a", "email": "a@example.com", "ops": list(ops)}


def _read(client: TestClient, path: str) -> bytes | None:
    response = client.get(docs_url("notes", "/read"), params={"path": path})
    return response.content if response.status_code == 200 else None


def test_batch_applies_every_op_type(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/old.md", b"old")
    put(client, "notes", "raw/src.md", b"src")
    body = batch(
        {"type": "write", "path": "memory/a.md", "content_base64": b64(b"A")},
        {"type": "append", "path": "memory/log.md", "content_base64": b64(b"L1")},
        {"type": "append", "path": "memory/log.md", "content_base64": b64(b"L2")},
        {"type": "delete", "path": "memory/old.md"},
        {"type": "rename", "path": "raw/src.md", "to": "raw/dst.md"},
    )
    response = client.post(URL, json=body)
    assert response.status_code == 200
    assert response.json() == {"committed": 5}
    assert "cache-control" not in response.headers
    assert _read(client, "memory/a.md") == b"A"
    assert _read(client, "memory/log.md") == b"L1L2"
    assert _read(client, "memory/old.md") is None
    assert _read(client, "raw/src.md") is None
    assert _read(client, "raw/dst.md") == b"src"


def test_failing_op_changes_nothing_search_included(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/keep.md", b"kept as is")
    body = batch(
        {
            "type": "write",
            "path": "memory/quokka.md",
            "content_base64": b64(b"# Quokkas\nQuokkas smile on Rottnest."),
        },
        {"type": "write", "path": "memory/keep.md", "content_base64": b64(b"overwritten")},
        {"type": "delete", "path": "memory/missing.md"},
    )
    problem = assert_problem(client.post(URL, json=body), 404, "not_found")
    assert "memory/missing.md" in problem["detail"]
    assert _read(client, "memory/quokka.md") is None
    assert _read(client, "memory/keep.md") == b"kept as is"
    hits = client.post("/v1/brains/notes/search", json={"query": "quokkas rottnest"}).json()["hits"]
    assert all(h["path"] != "memory/quokka.md" for h in hits)


def test_invalid_ops_are_400(client: TestClient, brain: Brain) -> None:
    cases = [
        batch({"type": "write", "path": "/abs.md", "content_base64": b64(b"x")}),
        batch({"type": "write", "path": "a.md", "content_base64": "%%%not-base64"}),
        batch({"type": "write", "path": "a.md"}),
        batch({"type": "rename", "path": "a.md"}),
        batch({"type": "explode", "path": "a.md"}),
        {"ops": []},
        {"reason": "x"},
    ]
    for body in cases:
        assert_problem(client.post(URL, json=body), 400, "validation_error")
    invalid_json = client.post(URL, content=b"{", headers={"Content-Type": "application/json"})
    assert_problem(invalid_json, 400, "validation_error")
    assert client.get(docs_url("notes"), params={"recursive": "true"}).json()["items"] == []


def test_batch_requires_json(client: TestClient, brain: Brain) -> None:
    response = client.post(URL, content=b'{"reason":"x","ops":[]}', headers={"Content-Type": "text/plain"})
    assert_problem(response, 415, "unsupported_media_type")


def test_more_than_1024_ops_is_413(client: TestClient, brain: Brain) -> None:
    op = {"type": "write", "path": "a.md", "content_base64": b64(b"x")}
    assert client.post(URL, json=batch(*[op] * 1024)).json() == {"committed": 1024}
    assert_problem(client.post(URL, json=batch(*[op] * 1025)), 413, "payload_too_large")


def test_decoded_payload_cap(tmp_path: Path) -> None:
    container = fake_container(tmp_path, max_batch_bytes=1000)
    container.brains.create("Notes", slug="notes")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        at_cap = batch(
            *[{"type": "write", "path": f"f{i}.md", "content_base64": b64(b"x" * 250)} for i in range(4)]
        )
        assert client.post(URL, json=at_cap).json() == {"committed": 4}
        over = batch(
            {"type": "write", "path": "g1.md", "content_base64": b64(b"y" * 600)},
            {"type": "append", "path": "g2.md", "content_base64": b64(b"y" * 401)},
        )
        problem = assert_problem(client.post(URL, json=over), 413, "payload_too_large")
        assert "after base64 decode" in problem["detail"]
        assert _read(client, "g1.md") is None


def test_batch_default_decoded_cap_is_8_mib(client: TestClient, brain: Brain) -> None:
    chunk = b64(b"q" * (2 * 1024 * 1024))
    ops = [{"type": "write", "path": f"big{i}.bin", "content_base64": chunk} for i in range(4)]
    ops.append({"type": "write", "path": "one-more.md", "content_base64": b64(b"!")})
    problem = assert_problem(client.post(URL, json=batch(*ops)), 413, "payload_too_large")
    assert "8388608" in problem["detail"]
    assert _read(client, "big0.bin") is None
