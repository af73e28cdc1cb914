"""zengram retries a search that found nothing once, with the query's significant terms, and
answers `retry: true`. Cairn has no such retry because it could never find anything (docs/
ZENGRAM.md, "Differences from zengram"); these tests pin the two reasons, on the fake and the
SQLite chunk index, so that a change to either makes the retry worth adding:

- the vector leg has no similarity floor: every memory the filters let through is a candidate,
  whatever the query says, so nothing found means nothing passes the filters, which a retry keeps;
- the keyword leg already matches any one of the query's significant terms (stop words dropped,
  the rest OR-ed), which is the retry's query.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_adapters

Z = "/zengram"
BILLING = "Nightly backup of the billing database runs at two."
DIM = 64


def serve(request: pytest.FixtureRequest, tmp_path: Path, **settings: Any) -> Iterator[TestClient]:
    adapters = fake_adapters(DIM)
    index = None
    if request.param == "sqlite":
        index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
        adapters = replace(adapters, chunks=index)
    container = build_container(Settings(data_dir=tmp_path / "data", **settings), adapters)
    try:
        with TestClient(create_app(container), base_url="http://localhost") as test_client:
            yield test_client
    finally:
        if index is not None:
            index.close()


@pytest.fixture(params=["fake", "sqlite"])
def hybrid(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    yield from serve(request, tmp_path)


@pytest.fixture(params=["fake", "sqlite"])
def keyword_only(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    yield from serve(request, tmp_path, vector_weight=0.0)


def seed(client: TestClient) -> None:
    for body in (
        {"type": "event", "content": BILLING, "client_id": "acme"},
        {
            "type": "fact",
            "content": "Globex pays invoices by card.",
            "key": "globex-pay",
            "client_id": "globex",
        },
    ):
        response = client.post(f"{Z}/memory", json={"source_agent": "claude-code", **body})
        assert response.status_code == 201, response.text


def search(client: TestClient, **params: str) -> dict[str, Any]:
    response = client.get(f"{Z}/memory/search", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_vector_leg_finds_what_the_filters_let_through_whatever_the_words(hybrid: TestClient) -> None:
    seed(hybrid)

    body = search(
        hybrid, q="quarterly revenue forecast meeting", client_id="acme", type="event", format="full"
    )

    assert body["count"] == 1 and body["results"][0]["text"] == BILLING
    assert body["retrieval"]["paths"] == {"vector": 1, "keyword": 0}
    assert "retry" not in body and "expanded_query" not in body


def test_the_keyword_leg_alone_needs_one_significant_term(keyword_only: TestClient) -> None:
    seed(keyword_only)

    found = search(keyword_only, q="what did the team decide about the billing forecast", format="full")
    unrelated = search(keyword_only, q="quarterly revenue forecast meeting")

    assert found["count"] == 1 and found["results"][0]["text"] == BILLING
    assert found["retrieval"]["paths"] == {"vector": 0, "keyword": 1}
    assert unrelated == {"query": "quarterly revenue forecast meeting", "count": 0, "results": []}


@pytest.mark.parametrize(
    "params",
    [
        {"client_id": "initech"},  # nobody's memories
        {"type": "fact", "at_time": "2001-01-01T00:00:00Z"},  # before any fact was valid
        {"client_id": "acme", "type": "fact"},  # acme has events only
    ],
)
def test_nothing_through_the_filters_is_the_plain_empty_answer(
    hybrid: TestClient, params: dict[str, str]
) -> None:
    seed(hybrid)
    q = "billing database backup"

    compact = search(hybrid, q=q, **params)
    full = search(hybrid, q=q, format="full", **params)
    single_terms = [search(hybrid, q=term, **params)["count"] for term in q.split()]

    assert compact == {"query": q, "count": 0, "results": []}
    assert full == {**compact, "retrieval": {"multi_path": True, "paths": {"vector": 0, "keyword": 0}}}
    assert single_terms == [0, 0, 0]  # what a retry with any of its terms would have found
