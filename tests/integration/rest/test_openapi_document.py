"""/openapi.json says what the server answers: Problem+JSON errors per operation, no 422, the
constraints the server enforces, the real media types; and a 405 names every allowed method."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container

B = "/v1/brains/{brainId}"
PROBLEM = {"$ref": "#/components/schemas/Problem"}
COMMON = {401, 403, 429, 500, 503}
# Hand-written, not derived: what each operation can answer besides success.
EXPECTED: dict[tuple[str, str], set[int]] = {
    ("get", "/v1/brains"): COMMON | {400},  # limit, cursor
    ("post", "/v1/brains"): COMMON | {400, 409, 413, 415},
    ("get", B): COMMON | {400, 404},
    ("put", f"{B}/documents"): COMMON | {400, 404, 409, 413, 415},
    ("delete", f"{B}/documents"): COMMON | {400, 404, 409},
    ("head", f"{B}/documents"): COMMON | {400, 404},
    ("get", f"{B}/documents/read"): COMMON | {400, 404},
    ("post", f"{B}/documents/append"): COMMON | {400, 404, 409, 413, 415},
    ("post", f"{B}/documents/batch-ops"): COMMON | {400, 404, 409, 413, 415},
    ("post", f"{B}/documents/ingest/url"): COMMON | {400, 404, 409, 413, 415, 502},
    ("post", f"{B}/documents/uploads"): COMMON | {400, 404, 409, 413, 415},
    ("post", f"{B}/documents/ingest/upload"): COMMON | {400, 404, 409, 413, 415},
    ("post", f"{B}/search"): COMMON | {400, 404, 413, 415},
    ("get", f"{B}/events"): COMMON | {400, 404},
    ("post", f"{B}/sessions/{{sessionId}}/messages"): COMMON | {400, 404, 409, 413, 415},
    ("post", f"{B}/consolidate"): COMMON | {400, 404, 409},
    ("get", "/v1/jobs/{jobId}"): COMMON | {400, 404},
    ("get", "/v1/admin/audit"): COMMON | {400, 404},
    ("post", "/v1/admin/keys"): COMMON | {400, 404, 409, 413, 415},
}


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with TestClient(
        create_app(fake_container(tmp_path_factory.mktemp("doc"))), base_url="http://localhost"
    ) as client:
        spec: dict[str, Any] = client.get("/openapi.json").json()
    return spec


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, ops in spec["paths"].items() for m, op in ops.items()]


def _parameter(operation: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in operation["parameters"] if p["name"] == name)
    return found


def test_no_422_and_no_validation_error_schema_anywhere(document: dict[str, Any]) -> None:
    text = json.dumps(document)
    assert "HTTPValidationError" not in text
    for method, path, operation in _operations(document):
        assert "422" not in operation["responses"], (method, path)


def test_each_operation_declares_the_problems_it_answers(document: dict[str, Any]) -> None:
    for (method, path), statuses in EXPECTED.items():
        responses = document["paths"][path][method]["responses"]
        errors = {int(s) for s in responses if int(s) >= 400}
        assert errors == statuses, (method, path, sorted(errors ^ statuses))
    for method, path, operation in _operations(document):
        if not path.startswith("/v1/"):
            continue
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            if method == "head":
                assert "content" not in response, (method, path, status)  # HEAD has no body
            else:
                assert response["content"] == {"application/problem+json": {"schema": PROBLEM}}
    problem = document["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"status", "title", "detail", "code"}
    unauthorized = document["paths"]["/v1/brains"]["get"]["responses"]["401"]
    assert unauthorized["headers"]["WWW-Authenticate"]["required"] is True
    assert "Retry-After" in document["paths"]["/v1/brains"]["get"]["responses"]["429"]["headers"]


def test_enforced_rules_are_in_the_document(document: dict[str, Any]) -> None:
    documents = document["paths"][f"{B}/documents"]
    for method, path in (("get", "/read"), ("get", "/stat"), ("post", "/append")):
        parameter = _parameter(document["paths"][f"{B}/documents{path}"][method], "path")
        assert parameter["required"] and parameter["schema"]["minLength"] == 1, path
    for method in ("head", "put", "delete"):
        parameter = _parameter(documents[method], "path")
        assert parameter["required"] and parameter["schema"]["minLength"] == 1, method
    assert _parameter(documents["delete"], "id")["deprecated"] is True
    key = document["components"]["schemas"]["CreateKey"]["properties"]["scopes"]
    assert key["items"]["enum"] == ["documents:read", "documents:write", "brains:admin"]
    for method, path in (("put", ""), ("post", "/append")):
        body = document["paths"][f"{B}/documents{path}"][method]["requestBody"]
        assert body["content"] == {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
        }
    for method, path in (("get", "/events"), ("post", "/ask")):
        content = document["paths"][f"{B}{path}"][method]["responses"]["200"]["content"]
        assert list(content) == ["text/event-stream"]
        assert content["text/event-stream"]["schema"]["required"] == ["id", "event", "data"]
    upload = document["paths"][f"{B}/documents/ingest/file"]["post"]["responses"]
    assert {"200", "202"} <= set(upload)


def test_the_server_answers_what_the_document_says_about_path(container: Container) -> None:
    container.brains.create("Notes", slug="notes")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        for method, url in (("GET", "/read"), ("GET", "/stat"), ("DELETE", ""), ("HEAD", "")):
            response = client.request(method, f"/v1/brains/notes/documents{url}", params={"path": ""})
            assert response.status_code == 400, (method, url)
        bad_scope = client.post("/v1/admin/keys", json={"name": "k", "scopes": ["documents:everything"]})
        assert bad_scope.status_code == 400 and bad_scope.json()["code"] == "validation_error"


def _concrete(path: str) -> str:
    return path.replace("{brainId}", "notes").replace("{sessionId}", "ses_x").replace("{jobId}", "job_x")


def test_a_405_lists_every_method_the_path_allows(document: dict[str, Any], container: Container) -> None:
    paths = {path: {m.upper() for m in ops} for path, ops in document["paths"].items()}
    paths["/mcp"] = {"POST"}
    with TestClient(create_app(container), base_url="http://localhost") as client:
        for path, allowed in paths.items():
            url = _concrete(path).replace("{keyId}", "key_x")
            refused = next(m for m in ("PATCH", "PUT", "DELETE", "OPTIONS") if m not in allowed)
            response = client.request(refused, url)
            assert response.status_code == 405, (refused, path)
            assert set(response.headers["allow"].split(", ")) == allowed, (refused, path)
            if path.startswith("/v1/"):
                assert response.json()["code"] == "method_not_allowed"


def test_every_401_carries_the_challenge_the_document_promises(
    document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    secured = fake_container(tmp_path_factory.mktemp("secured"), token="a-token-for-this-test")
    with TestClient(create_app(secured), base_url="http://localhost") as client:
        for method, path, _ in _operations(document):
            if not path.startswith("/v1/"):
                continue
            url = _concrete(path).replace("{keyId}", "key_x")
            response = client.request(method.upper(), url)
            assert response.status_code == 401, (method, path)
            assert response.headers["www-authenticate"].startswith("Bearer "), (method, path)
