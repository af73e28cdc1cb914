"""Store protocol mutations: put, append, delete, rename; path rules, media types, body limits."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from cairn.domain.models import Brain
from tests.integration.rest.helpers import OCTET, assert_problem, docs_url, put

MiB = 1024 * 1024
BAD_PATHS = [
    "/memory/a.md",
    "memory/../a.md",
    "memory/./a.md",
    "memory//a.md",
    "memory/a.md/",
    "a\\b.md",
    "a\x00b",
]


def _read(client: TestClient, path: str) -> bytes:
    response = client.get(docs_url("notes", "/read"), params={"path": path})
    assert response.status_code == 200, response.text
    return response.content


def test_put_creates_then_replaces_with_204_and_no_cache_headers(client: TestClient, brain: Brain) -> None:
    first = put(client, "notes", "memory/deep/a.md", b"one")
    assert first.status_code == 204
    assert first.content == b""
    assert "cache-control" not in first.headers and "etag" not in first.headers
    put(client, "notes", "memory/deep/a.md", b"two")
    assert _read(client, "memory/deep/a.md") == b"two"


def test_append_creates_then_extends(client: TestClient, brain: Brain) -> None:
    url = docs_url("notes", "/append")
    first = client.post(url, params={"path": "log.md"}, content=b"a", headers=OCTET)
    assert first.status_code == 204
    assert "cache-control" not in first.headers
    client.post(url, params={"path": "log.md"}, content=b"b", headers=OCTET)
    assert _read(client, "log.md") == b"ab"


def test_delete_then_404(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "a.md", b"x")
    deleted = client.delete(docs_url("notes"), params={"path": "a.md"})
    assert deleted.status_code == 204
    assert "cache-control" not in deleted.headers
    assert client.head(docs_url("notes"), params={"path": "a.md"}).status_code == 404
    assert_problem(client.delete(docs_url("notes"), params={"path": "a.md"}), 404, "not_found")


def test_legacy_delete_by_id_and_missing_selector(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "a.md", b"x")
    doc_id = client.get(docs_url("notes")).json()["items"][0]["id"]
    assert client.delete(docs_url("notes"), params={"id": doc_id}).status_code == 204
    assert client.head(docs_url("notes"), params={"path": "a.md"}).status_code == 404
    assert_problem(client.delete(docs_url("notes"), params={"id": doc_id}), 404, "not_found")
    assert_problem(client.delete(docs_url("notes")), 400, "validation_error")


def test_rename_moves_and_overwrites_destination(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "raw/old.md", b"source")
    put(client, "notes", "raw/new.md", b"to be replaced")
    response = client.post(docs_url("notes", "/rename"), json={"from": "raw/old.md", "to": "raw/new.md"})
    assert response.status_code == 204
    assert "cache-control" not in response.headers
    assert _read(client, "raw/new.md") == b"source"
    assert client.head(docs_url("notes"), params={"path": "raw/old.md"}).status_code == 404


def test_rename_errors(client: TestClient, brain: Brain) -> None:
    url = docs_url("notes", "/rename")
    assert_problem(client.post(url, json={"from": "nope.md", "to": "b.md"}), 404, "not_found")
    assert_problem(client.post(url, json={"from": "a.md"}), 400, "validation_error")
    assert_problem(client.post(url, json={"from": "/a.md", "to": "b.md"}), 400, "validation_error")
    bad_json = client.post(url, content=b"{", headers={"Content-Type": "application/json"})
    assert_problem(bad_json, 400, "validation_error")
    as_octets = client.post(url, content=b'{"from":"a.md","to":"b.md"}', headers=OCTET)
    assert_problem(as_octets, 415, "unsupported_media_type")


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_invalid_paths_are_400_on_every_route(client: TestClient, brain: Brain, bad: str) -> None:
    params = {"path": bad}
    cases = [
        client.get(docs_url("notes", "/read"), params=params),
        client.get(docs_url("notes", "/stat"), params=params),
        client.put(docs_url("notes"), params=params, content=b"x", headers=OCTET),
        client.post(docs_url("notes", "/append"), params=params, content=b"x", headers=OCTET),
        client.delete(docs_url("notes"), params=params),
        client.post(docs_url("notes", "/rename"), json={"from": "ok.md", "to": bad}),
        client.get(docs_url("notes"), params={"dir": bad}),
    ]
    for response in cases:
        assert_problem(response, 400, "validation_error")
    assert client.head(docs_url("notes"), params=params).status_code == 400


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/json"])
def test_put_and_append_require_octet_stream(
    client: TestClient, brain: Brain, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    for url in (docs_url("notes"), docs_url("notes", "/append")):
        method = "PUT" if url.endswith("documents") else "POST"
        response = client.request(method, url, params={"path": "a.md"}, content=b"x", headers=headers)
        assert_problem(response, 415, "unsupported_media_type")
    assert client.head(docs_url("notes"), params={"path": "a.md"}).status_code == 404


def test_octet_stream_with_parameters_is_accepted(client: TestClient, brain: Brain) -> None:
    headers = {"Content-Type": "Application/Octet-Stream; charset=binary"}
    assert (
        client.put(docs_url("notes"), params={"path": "a.md"}, content=b"x", headers=headers).status_code
        == 204
    )


def test_put_and_append_body_limit_is_2_mib(client: TestClient, brain: Brain) -> None:
    assert put(client, "notes", "big.bin", b"a" * (2 * MiB)).status_code == 204
    body = assert_problem(put(client, "notes", "big.bin", b"b" * (2 * MiB + 1)), 413, "payload_too_large")
    assert "2097152" in body["detail"]
    assert body["title"] == "Payload Too Large"
    over = client.post(
        docs_url("notes", "/append"), params={"path": "big.bin"}, content=b"c" * (2 * MiB + 1), headers=OCTET
    )
    assert_problem(over, 413, "payload_too_large")
    assert _read(client, "big.bin") == b"a" * (2 * MiB)


def test_body_limit_holds_without_content_length(client: TestClient, brain: Brain) -> None:
    def chunks() -> Iterator[bytes]:  # streamed: no Content-Length header is sent
        for _ in range(3):
            yield b"z" * MiB

    response = client.put(docs_url("notes"), params={"path": "s.bin"}, content=chunks(), headers=OCTET)
    assert_problem(response, 413, "payload_too_large")
    assert client.head(docs_url("notes"), params={"path": "s.bin"}).status_code == 404


def test_gzip_bodies_are_decoded_and_capped_after_decoding(client: TestClient, brain: Brain) -> None:
    headers = {**OCTET, "Content-Encoding": "gzip"}
    ok = client.put(
        docs_url("notes"), params={"path": "g.md"}, content=gzip.compress(b"hello gzip"), headers=headers
    )
    assert ok.status_code == 204
    assert _read(client, "g.md") == b"hello gzip"
    bomb = gzip.compress(b"\0" * (3 * MiB))  # a few KiB on the wire
    assert_problem(
        client.put(docs_url("notes"), params={"path": "g.md"}, content=bomb, headers=headers),
        413,
        "payload_too_large",
    )
    broken = client.put(docs_url("notes"), params={"path": "g.md"}, content=b"not gzip", headers=headers)
    assert_problem(broken, 400, "validation_error")
    odd = client.put(
        docs_url("notes"), params={"path": "g.md"}, content=b"x", headers={**OCTET, "Content-Encoding": "br"}
    )
    assert_problem(odd, 415, "unsupported_media_type")
    assert _read(client, "g.md") == b"hello gzip"


def test_writes_are_searchable(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/global/zebra.md", b"# Zebras\nZebras sleep standing up in the savanna.")
    hits = client.post("/v1/brains/notes/search", json={"query": "zebras savanna"}).json()["hits"]
    assert hits[0]["path"] == "memory/global/zebra.md"
    client.delete(docs_url("notes"), params={"path": "memory/global/zebra.md"})
    hits = client.post("/v1/brains/notes/search", json={"query": "zebras savanna"}).json()["hits"]
    assert all(h["path"] != "memory/global/zebra.md" for h in hits)
