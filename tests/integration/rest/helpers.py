"""Assertions and request helpers shared by the REST tests."""

from __future__ import annotations

from typing import Any

import httpx

OCTET = {"Content-Type": "application/octet-stream"}


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """A Problem+JSON body with status, title, detail and code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def docs_url(brain_ref: str, suffix: str = "") -> str:
    return f"/v1/brains/{brain_ref}/documents{suffix}"


def put(client: Any, brain_ref: str, path: str, data: bytes) -> httpx.Response:
    response: httpx.Response = client.put(
        docs_url(brain_ref), params={"path": path}, content=data, headers=OCTET
    )
    return response
