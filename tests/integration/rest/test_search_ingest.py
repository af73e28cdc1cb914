"""Search, remember and ingest routes: the services the MCP tools share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.rest.helpers import assert_problem, docs_url, put
from tests.support.page_server import serving

SEARCH = "/v1/brains/notes/search"


def test_search_returns_shaped_hits(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/global/tea.md", b"# Tea\nOolong tea is partially oxidised.")
    put(client, "notes", "memory/project/p/coffee.md", b"# Coffee\nEspresso is brewed under pressure.")
    response = client.post(SEARCH, json={"query": "oolong tea", "top_k": 5})
    assert response.status_code == 200
    body = response.json()
    assert body["query"] == "oolong tea"
    assert body["brain_id"] == brain.id
    assert isinstance(body["took_ms"], float | int)
    hit = body["hits"][0]
    assert hit["path"] == "memory/global/tea.md"
    assert "Oolong" in hit["content"]
    assert hit["brain_id"] == brain.id
    assert hit["title"] == "Tea"
    for key in ("score", "chunk_id", "document_id", "metadata", "component_scores"):
        assert key in hit


def test_search_scope_and_path_prefix_filter(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/global/tea.md", b"# Tea\nGreen tea.")
    put(client, "notes", "memory/project/p/tea.md", b"# Tea too\nBlack tea.")
    scoped = client.post(SEARCH, json={"query": "tea", "scope": "project"}).json()["hits"]
    assert [h["path"] for h in scoped] == ["memory/project/p/tea.md"]
    prefixed = client.post(SEARCH, json={"query": "tea", "path_prefix": "memory/global/"}).json()["hits"]
    assert [h["path"] for h in prefixed] == ["memory/global/tea.md"]
    # both narrow: a scope with a folder inside it, or outside it (they were ORed: each widened the other)
    put(client, "notes", "memory/global/projects/tea.md", b"# Tea plans\nWhite tea.")
    put(client, "notes", "private/tea.md", b"# Private tea\nPu-erh tea.")
    both = {"query": "tea", "scope": "global", "path_prefix": "memory/global/projects/"}
    inside = client.post(SEARCH, json=both).json()["hits"]
    outside = client.post(SEARCH, json={**both, "path_prefix": "private/"}).json()["hits"]
    wider = client.post(SEARCH, json={**both, "path_prefix": "memory/"}).json()["hits"]
    assert [h["path"] for h in inside] == ["memory/global/projects/tea.md"] and outside == []
    assert sorted(h["path"] for h in wider) == ["memory/global/projects/tea.md", "memory/global/tea.md"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "x" * 4097},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": 101},
        {"query": "x", "scope": "team"},
        {"query": "x", "sort": "random"},
    ],
)
def test_search_validation_is_400(client: TestClient, brain: Brain, body: dict[str, object]) -> None:
    assert_problem(client.post(SEARCH, json=body), 400, "validation_error")


def test_remember_returns_201_document_record(client: TestClient, brain: Brain) -> None:
    response = client.post(
        docs_url("notes"),
        json={
            "content": "# Running\nSaturday 10k.",
            "tags": ["running", "health"],
            "path": "/memory/global/run.md",
        },
    )
    assert response.status_code == 201
    record = response.json()
    assert set(record) == {
        "id", "brain_id", "title", "path", "source", "content_type", "byte_size",
        "checksum_sha256", "metadata", "commit_sha", "created_at", "updated_at", "deleted_at",
    }  # fmt: skip
    assert record["path"] == "memory/global/run.md"
    assert record["title"] == "Running"
    assert record["metadata"]["tags"] == "running,health"
    assert record["byte_size"] == len(b"# Running\nSaturday 10k.")
    assert record["created_at"].endswith("+00:00")
    assert record["deleted_at"] is None
    assert client.get(docs_url("notes", "/read"), params={"path": "memory/global/run.md"}).status_code == 200


def test_remember_validation(client: TestClient, brain: Brain) -> None:
    assert_problem(client.post(docs_url("notes"), json={"content": ""}), 400, "validation_error")
    assert_problem(
        client.post(docs_url("notes"), json={"content": "x", "tags": ["a,b"]}), 400, "validation_error"
    )


def test_remember_takes_tags_as_the_jeffs_wrapper_forwards_them(client: TestClient, brain: Brain) -> None:
    made = client.post(
        docs_url("notes"),
        json={
            "content": "# Running\nSaturday 10k.",
            "title": "Running",
            "metadata": {"tags": "running, health"},
        },
    )
    assert made.status_code == 201, made.text
    assert made.json()["metadata"]["tags"] == "running,health"
    for body, named in (
        ({"content": "x", "metadata": {"tags": "a", "colour": "red"}}, "colour"),
        ({"content": "x", "metadata": {"tags": 3}}, "metadata.tags"),
        ({"content": "x", "tags": ["a"], "metadata": {"tags": "b"}}, "not both"),
    ):
        refused = client.post(docs_url("notes"), json=body)
        assert_problem(refused, 400, "validation_error")
        assert named in refused.json()["detail"]
    listed = client.get(docs_url("notes"), params={"dir": "memory/global"}).json()
    assert [i["path"] for i in listed["items"]] == [made.json()["path"]]  # the refused stored nothing


def test_ingest_file_upload(client: TestClient, brain: Brain) -> None:
    files = {"file": ("readme.md", b"# Readme\nHow to build the thing.", "application/octet-stream")}
    response = client.post(docs_url("notes", "/ingest/file"), files=files)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "completed"
    assert body["path"] == "ingest/readme.md"
    assert body["document_id"].startswith("doc_")
    assert len(body["hash"]) == 64
    assert body["chunk_count"] >= 1 and body["embedded_count"] == body["chunk_count"]
    assert body["reused"] is False
    assert isinstance(body["duration_ms"], int)
    again = client.post(docs_url("notes", "/ingest/file"), files=files).json()
    assert again["reused"] is True and again["document_id"] == body["document_id"]


def test_json_with_an_integer_longer_than_python_reads_is_stored_and_found(
    client: TestClient, brain: Brain
) -> None:
    ledger = b'{"title": "Ledger", "checksum": ' + b"7" * 4301 + b', "owner": "treasury"}'
    assert put(client, "notes", "data/ledger.json", ledger).status_code == 204
    appended = client.post(
        docs_url("notes", "/append"),
        params={"path": "data/rows.jsonl"},
        content=b'{"a": 1}\n' + ledger,
        headers={"content-type": "application/octet-stream"},
    )
    assert appended.status_code == 204, appended.text
    ingested = client.post(docs_url("notes", "/ingest/file"), files={"file": ("big.json", ledger)})
    assert ingested.status_code == 200, ingested.text
    found = client.post(SEARCH, json={"query": "treasury ledger", "top_k": 5}).json()["hits"]
    assert {"data/ledger.json", "ingest/big.json"} <= {hit["path"] for hit in found}


def test_ingest_file_as_kind_and_errors(client: TestClient, brain: Brain) -> None:
    url = docs_url("notes", "/ingest/file")
    as_text = client.post(url, files={"file": ("notes.bin", b"plain words")}, data={"as": "text"})
    assert as_text.status_code == 200, as_text.text
    assert_problem(
        client.post(url, files={"file": ("a.md", b"x")}, data={"as": "docx"}), 400, "validation_error"
    )
    no_file = client.post(url, files={"attachment": ("a.md", b"x")}, data={"as": "text"})
    assert_problem(no_file, 400, "validation_error")
    assert_problem(client.post(url, json={"file": "x"}), 415, "unsupported_media_type")


def test_ingest_file_over_limit_is_413_file_too_large(tmp_path: Path) -> None:
    container = fake_container(tmp_path, max_file_bytes=1024)
    container.brains.create("Notes", slug="notes")
    url = docs_url("notes", "/ingest/file")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        assert client.post(url, files={"file": ("ok.md", b"y" * 1024)}).status_code == 200
        assert_problem(client.post(url, files={"file": ("big.md", b"y" * 1025)}), 413, "file_too_large")
        huge = client.post(url, files={"file": ("huge.md", b"y" * (200 * 1024))})
        assert_problem(huge, 413, "file_too_large")


@pytest.fixture
def page_url() -> Iterator[str]:
    body = b"# Remote page\nFetched over loopback for the ingest test."
    with serving({"/docs/page.md": (200, body)}) as base:
        yield f"{base}/docs/page.md"


def test_ingest_url(tmp_path: Path, page_url: str) -> None:
    container = fake_container(tmp_path, allow_private_urls=True)
    container.brains.create("Notes", slug="notes")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        response = client.post(docs_url("notes", "/ingest/url"), json={"url": page_url})
        assert response.status_code == 200, response.text
        body = response.json()
        port = page_url.split(":")[2].split("/")[0]
        assert body["status"] == "completed"
        assert body["path"] == f"ingest/127.0.0.1-{port}/docs/page.md"
        hits = client.post(SEARCH, json={"query": "remote page loopback"}).json()["hits"]
        assert hits[0]["path"] == body["path"]
        # the same page under other queries is another document; the same URL again updates its own
        other = client.post(docs_url("notes", "/ingest/url"), json={"url": page_url + "?v=2"}).json()
        again = client.post(docs_url("notes", "/ingest/url"), json={"url": page_url}).json()
        assert other["path"].startswith(f"ingest/127.0.0.1-{port}/docs/page-")
        assert other["path"].endswith(".md")
        assert other["document_id"] != body["document_id"] and again["document_id"] == body["document_id"]


def test_ingest_url_refuses_private_addresses(client: TestClient, brain: Brain) -> None:
    response = client.post(docs_url("notes", "/ingest/url"), json={"url": "http://127.0.0.1:9/secret"})
    assert_problem(response, 400, "url_refused")
    assert_problem(
        client.post(docs_url("notes", "/ingest/url"), json={"url": "ftp://example.com/x"}), 400, "url_refused"
    )
