"""/v1/brains: create, list, get by id or slug; errors as Problem+JSON."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.integration.rest.helpers import assert_problem


def test_create_brain_derives_slug_and_returns_201(client: TestClient) -> None:
    response = client.post("/v1/brains", json={"name": "Work Notes"})
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("brn_")
    assert body["slug"] == "work-notes"
    assert body["name"] == "Work Notes"
    assert body["visibility"] == "private"
    assert body["created_at"].endswith("+00:00")
    assert "Cache-Control" not in response.headers


def test_create_brain_with_slug_and_visibility(client: TestClient) -> None:
    response = client.post("/v1/brains", json={"name": "Team", "slug": "team-1", "visibility": "tenant"})
    assert response.status_code == 201
    assert response.json()["slug"] == "team-1"
    assert response.json()["visibility"] == "tenant"


def test_duplicate_slug_is_409_conflict(client: TestClient) -> None:
    client.post("/v1/brains", json={"name": "A", "slug": "same"})
    assert_problem(client.post("/v1/brains", json={"name": "B", "slug": "same"}), 409, "conflict")


def test_invalid_brain_fields_are_400(client: TestClient) -> None:
    assert_problem(client.post("/v1/brains", json={"name": ""}), 400, "validation_error")
    assert_problem(client.post("/v1/brains", json={"name": "x", "slug": "Bad Slug"}), 400, "validation_error")
    assert_problem(
        client.post("/v1/brains", json={"name": "x", "visibility": "open"}), 400, "validation_error"
    )
    assert_problem(client.post("/v1/brains", json={}), 400, "validation_error")


def test_invalid_json_is_400_and_wrong_media_type_is_415(client: TestClient) -> None:
    bad_json = client.post("/v1/brains", content=b"{nope", headers={"Content-Type": "application/json"})
    assert_problem(bad_json, 400, "validation_error")
    form = client.post("/v1/brains", content=b"name=x", headers={"Content-Type": "text/plain"})
    assert_problem(form, 415, "unsupported_media_type")


def test_list_and_get_by_id_and_slug(client: TestClient) -> None:
    created = client.post("/v1/brains", json={"name": "First"}).json()
    client.post("/v1/brains", json={"name": "Second"})

    listed = client.get("/v1/brains").json()["items"]
    assert [b["slug"] for b in listed] == ["first", "second"]

    by_id = client.get(f"/v1/brains/{created['id']}").json()
    by_slug = client.get("/v1/brains/first").json()
    assert by_id == by_slug == created


def test_unknown_brain_is_404_not_found_everywhere(client: TestClient) -> None:
    for method, url in [
        ("GET", "/v1/brains/nope"),
        ("GET", "/v1/brains/brn_missing/documents/read?path=a.md"),
        ("GET", "/v1/brains/nope/documents"),
        ("POST", "/v1/brains/nope/search"),
        ("GET", "/v1/brains/nope/events"),
    ]:
        response = client.request(method, url, json={"query": "x"} if method == "POST" else None)
        body = assert_problem(response, 404, "not_found")
        assert "nope" in body["detail"] or "brn_missing" in body["detail"]
