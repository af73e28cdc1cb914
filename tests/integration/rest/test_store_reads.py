"""Store protocol reads: read, head, stat, listing (path and legacy), caching headers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from tests.integration.rest.helpers import assert_problem, docs_url, put

OCTET = {"content-type": "application/octet-stream"}


@pytest.fixture
def tree(client: TestClient, brain: Brain) -> None:
    for path in ["memory/b.md", "memory/a.md", "memory/_index.md", "memory/sub/c.md", "raw/x.txt", "top.md"]:
        assert put(client, "notes", path, f"content of {path}".encode()).status_code == 204


def test_read_returns_raw_bytes_uncached(client: TestClient, brain: Brain) -> None:
    data = bytes(range(256)) * 3
    put(client, "notes", "raw/blob.bin", data)
    response = client.get(docs_url("notes", "/read"), params={"path": "raw/blob.bin"})
    assert response.status_code == 200
    assert response.content == data
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["cache-control"] == "no-store"
    assert "etag" not in response.headers


def test_brain_id_and_slug_address_the_same_store(client: TestClient, brain: Brain) -> None:
    put(client, brain.id, "memory/a.md", b"by id")
    assert client.get(docs_url("notes", "/read"), params={"path": "memory/a.md"}).content == b"by id"


def test_head_is_200_empty_or_404(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/a.md", b"x")
    found = client.head(docs_url("notes"), params={"path": "memory/a.md"})
    assert found.status_code == 200
    assert found.content == b""
    assert found.headers["cache-control"] == "no-store"
    assert client.head(docs_url("notes"), params={"path": "memory/missing.md"}).status_code == 404


def test_stat_file_and_directory(client: TestClient, tree: None) -> None:
    file_stat = client.get(docs_url("notes", "/stat"), params={"path": "memory/a.md"})
    assert file_stat.headers["cache-control"] == "no-store"
    body = file_stat.json()
    assert body["path"] == "memory/a.md"
    assert body["size"] == len(b"content of memory/a.md")
    assert body["is_dir"] is False
    assert body["mtime"].endswith("Z")
    assert client.get(docs_url("notes", "/stat"), params={"path": "memory/sub"}).json()["is_dir"] is True
    # HEAD is the store's `exists`, which follows stat: a folder exists, a missing one does not
    assert client.head(docs_url("notes"), params={"path": "memory/sub"}).status_code == 200
    assert client.head(docs_url("notes"), params={"path": "memory/none"}).status_code == 404


def test_missing_paths_are_404_not_found(client: TestClient, brain: Brain) -> None:
    params = {"path": "memory/missing.md"}
    body = assert_problem(client.get(docs_url("notes", "/read"), params=params), 404, "not_found")
    assert "memory/missing.md" in body["detail"]
    assert body["title"] == "Not Found"
    assert_problem(client.get(docs_url("notes", "/stat"), params=params), 404, "not_found")
    assert_problem(client.delete(docs_url("notes"), params=params), 404, "not_found")


def test_missing_path_parameter_is_400(client: TestClient, brain: Brain) -> None:
    assert_problem(client.get(docs_url("notes", "/read")), 400, "validation_error")
    assert_problem(client.get(docs_url("notes", "/stat")), 400, "validation_error")


def _paths(client: TestClient, **params: str) -> list[tuple[str, bool]]:
    response = client.get(docs_url("notes"), params=params)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    return [(i["path"], i["is_dir"]) for i in response.json()["items"]]


def test_listing_root_non_recursive_shows_directories(client: TestClient, tree: None) -> None:
    assert _paths(client, dir="") == [("memory", True), ("raw", True), ("top.md", False)]


def test_listing_directory_hides_generated_by_default(client: TestClient, tree: None) -> None:
    assert _paths(client, dir="memory") == [
        ("memory/a.md", False),
        ("memory/b.md", False),
        ("memory/sub", True),
    ]
    assert _paths(client, dir="memory", include_generated="true") == [
        ("memory/_index.md", False),
        ("memory/a.md", False),
        ("memory/b.md", False),
        ("memory/sub", True),
    ]


def test_listing_recursive_omits_directories_in_ascending_order(client: TestClient, tree: None) -> None:
    assert _paths(client, dir="memory", recursive="true") == [
        ("memory/a.md", False),
        ("memory/b.md", False),
        ("memory/sub/c.md", False),
    ]
    everything = _paths(client, recursive="true", include_generated="true")
    assert [p for p, _ in everything] == sorted(p for p, _ in everything)
    assert len(everything) == 6


def test_listing_glob_matches_base_names(client: TestClient, tree: None) -> None:
    assert _paths(client, recursive="true", glob="[ab].md") == [
        ("memory/a.md", False),
        ("memory/b.md", False),
    ]
    assert _paths(client, recursive="true", glob="*.txt") == [("raw/x.txt", False)]
    assert _paths(client, dir="memory", recursive="false", glob="c*") == []


def test_listing_item_shape(client: TestClient, tree: None) -> None:
    item = client.get(docs_url("notes"), params={"dir": "raw"}).json()["items"][0]
    assert set(item) == {"path", "size", "mtime", "is_dir"}
    assert item["size"] == len(b"content of raw/x.txt")


def test_listing_invalid_dir_and_flag_are_400(client: TestClient, brain: Brain) -> None:
    assert_problem(client.get(docs_url("notes"), params={"dir": "/memory"}), 400, "validation_error")
    assert_problem(client.get(docs_url("notes"), params={"recursive": "maybe"}), 400, "validation_error")


def test_legacy_listing_returns_document_records(
    client: TestClient, container: Container, tree: None
) -> None:
    response = client.get(docs_url("notes"))
    assert response.status_code == 200
    items = response.json()["items"]
    assert len(items) == 6
    expected_keys = {
        "id", "brain_id", "title", "path", "source", "content_type", "byte_size",
        "checksum_sha256", "metadata", "commit_sha", "created_at", "updated_at", "deleted_at",
    }  # fmt: skip
    assert all(set(item) == expected_keys for item in items)
    by_path = {item["path"]: item for item in items}
    assert by_path["memory/a.md"]["byte_size"] == len(b"content of memory/a.md")
    assert by_path["memory/a.md"]["deleted_at"] is None


def test_reserved_headers_are_ignored(client: TestClient, brain: Brain) -> None:
    headers = {
        "X-Tenant-Id": "unknown-tenant",
        "X-Workspace-Id": "ws-unknown",
        "Idempotency-Key": "k-1",
        "If-None-Match": '"whatever"',
        "If-Match": '"stale"',
    }
    put_headers = {**headers, "Content-Type": "application/octet-stream"}
    assert (
        client.put(docs_url("notes"), params={"path": "a.md"}, content=b"1", headers=put_headers).status_code
        == 204
    )
    read = client.get(docs_url("notes", "/read"), params={"path": "a.md"}, headers=headers)
    assert (read.status_code, read.content) == (200, b"1")


@pytest.mark.parametrize("damage", ["emptied", "removed"])
def test_damaged_stored_bytes_are_refused_clearly_never_served(
    client: TestClient, brain: Brain, container: Container, damage: str
) -> None:
    put(client, "notes", "memory/a.md", b"the boiler is serviced in March")
    put(client, "notes", "memory/b.md", b"the kettle is descaled on Sundays")
    doc = container.documents.get(brain, "memory/a.md")
    if damage == "removed":
        container.adapters.blobs.delete(doc.blob_key)
    else:
        container.adapters.blobs.put(doc.blob_key, b"")

    refused = client.get(docs_url("notes", "/read"), params={"path": "memory/a.md"})

    body = assert_problem(refused, 503, "damaged_content")
    assert "memory/a.md" in body["detail"] and "cairn check --deep" in body["detail"]
    assert doc.blob_key not in refused.text  # where it is stored stays internal
    assert client.get(docs_url("notes", "/read"), params={"path": "memory/b.md"}).status_code == 200
    assert put(client, "notes", "memory/a.md", b"the boiler is serviced in March").status_code == 204
    assert client.get(docs_url("notes", "/read"), params={"path": "memory/a.md"}).content.startswith(
        b"the boiler"
    )


def test_a_path_percent_encoded_in_another_charset_is_refused_not_folded(
    client: TestClient, brain: Brain
) -> None:
    """Latin-1 é and è (%E9, %E8) are not UTF-8: decoded leniently both were U+FFFD, one document."""
    for raw in ("e/caf%E9.md", "e/caf%E8.md", "e/%ED%A0%80.md"):
        url = f"{docs_url('notes')}?path={raw}"
        assert_problem(client.put(url, content=b"x", headers=OCTET), 400, "validation_error")
        assert_problem(client.get(f"{docs_url('notes', '/read')}?path={raw}"), 400, "validation_error")
        assert_problem(client.delete(url), 400, "validation_error")
    assert (
        client.put(f"{docs_url('notes')}?path=e/caf%C3%A9.md", content=b"x", headers=OCTET).status_code == 204
    )
    assert client.get(docs_url("notes", "/read"), params={"path": "e/café.md"}).content == b"x"
    assert _paths(client, recursive="true") == [("e/café.md", False)]
