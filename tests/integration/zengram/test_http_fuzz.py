"""zengram's HTTP API fuzzed route by route: it publishes no OpenAPI document, so the routes, the
query parameters and body fields it reads are listed here, and Hypothesis draws their values
(strings that have broken parsers elsewhere, the free text zengram gives a meaning to, ids and
names that exist, any JSON value) and raw bodies that are not JSON objects. Whatever is sent, the
answer is zengram's own: a status under 500 with an `{"error": ...}` body when refused (or
consolidation's `{"status": "skipped"}` when one is already running), nothing
logged as a failed operation, and the API still answers afterwards. On both shapes (SQLite and
files; DynamoDB and S3 under moto with the fake OpenSearch cluster), with research enabled.

CAIRN_FUZZ_EXAMPLES sets the examples per route (default 15) for a longer hunt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import EXAMPLES, ErrorLog, HttpWorld, errors_logged, fixed
from tests.support.schema_args import COMMON, NASTY, json_values
from tests.support.shapes import SHAPES, served

Z = "/zengram"

FIELDS = (
    "type", "content", "text", "key", "importance", "source_agent", "client_id", "category",
    "knowledge_category", "metadata", "subject", "status_value", "valid_from", "valid_to", "id",
    "created_at", "deleted_at", "deletion_reason", "entities", "observed_by", "confidence",
    "access_count", "reason", "limit", "topic", "max_iterations", "operator_approved", "since",
    "include",
)  # fmt: skip
"""Body fields the API reads somewhere (stores, updates, deletes, imports, reflect, research)."""

PARAMS = (
    "q", "type", "limit", "offset", "format", "client_id", "source_agent", "agent", "since",
    "at_time", "known_at", "include_superseded", "track_access", "read_only", "active_only",
    "category", "knowledge_category", "sync", "operator_approved", "include", "subject", "key",
)  # fmt: skip
"""Query parameters the API reads."""

RAW = (
    b"", b"{", b"[]", b'"x"', b"null", b"1e400", b"\xff\xfe", b'{"a":' * 200, b"[" * 5000, b'{"type":NaN}',
    b'{"type":"fact","content":"a","content":"b"}',
)  # fmt: skip
"""Bodies that are no JSON object, or JSON that parsers disagree on."""

SCALARS = ("true", "false", "1", "0", "-5", "101", "1e9", "index", "full", "json", "critical", "2025-06-01")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    """With `{}` where a drawn id or name goes."""
    body: bool = False
    query: bool = False


ROUTES = (
    Route("GET", "/health"),
    Route("POST", "/memory", body=True),
    Route("GET", "/memory/search", query=True),
    Route("GET", "/memory/query", query=True),
    Route("PATCH", "/memory/{}", body=True),
    Route("DELETE", "/memory/{}", body=True),
    Route("GET", "/briefing", query=True),
    Route("GET", "/stats"),
    Route("GET", "/entities", query=True),
    Route("GET", "/entities/stats"),
    Route("GET", "/entities/{}", query=True),
    Route("GET", "/entities/{}/memories", query=True),
    Route("POST", "/consolidate", query=True),
    Route("GET", "/consolidate/status"),
    Route("GET", "/consolidate/job/{}"),
    Route("GET", "/export", query=True),
    Route("POST", "/export/import", body=True, query=True),
    Route("POST", "/reflect", body=True),
    Route("POST", "/research", body=True),
    Route("PUT", "/{}", body=True),
)


def _strings(words: tuple[str, ...]) -> st.SearchStrategy[str]:
    return (
        st.sampled_from(NASTY + COMMON + SCALARS + words)
        | st.text(max_size=40)
        | st.sampled_from(words).map(lambda w: w + "\x00")
    )


def _value(words: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return _strings(words) | json_values | st.integers(-10, 200) | st.lists(_strings(words), max_size=3)


def _fields(words: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), _value(words), max_size=6)


def _body(words: tuple[str, ...]) -> st.SearchStrategy[bytes]:
    """A JSON object of the fields the API reads (an import's `data` of such records too), or a
    body that is no such object."""
    record = st.fixed_dictionaries({"type": st.sampled_from(COMMON), "content": _strings(words)}).flatmap(
        lambda base: _fields(words).map(lambda extra: {**base, **extra})
    )
    objects = (
        _fields(words)
        | record
        | st.lists(record | json_values, max_size=4).map(
            lambda data: {"data": data, "operator_approved": True}
        )
    )
    raw = st.sampled_from(RAW)
    return objects.map(lambda o: json.dumps(o).encode()) | raw


def _query(words: tuple[str, ...]) -> st.SearchStrategy[list[tuple[str, str]]]:
    """Pairs rather than a dict, so a parameter may come twice."""
    return st.lists(st.tuples(st.sampled_from(PARAMS) | st.text(max_size=6), _strings(words)), max_size=5)


@pytest.fixture
def failures() -> Iterator[ErrorLog]:
    with errors_logged() as log:
        yield log


@pytest.fixture(params=SHAPES)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HttpWorld]:
    with served(request.param, request, tmp_path, zengram_research_enabled=True) as (_, client):
        yield HttpWorld(client, _seed(client))


def _seed(client: TestClient) -> tuple[str, ...]:
    ids = []
    for body in (
        {"type": "fact", "content": "Ada leads the payments team.", "key": "lead", "client_id": "acme"},
        {"type": "decision", "content": "We chose Postgres for billing.", "source_agent": "claude-code"},
        {"type": "event", "content": "Deploy of api-gateway failed on Monday."},
    ):
        body.setdefault("source_agent", "fuzz")
        stored = client.post(f"{Z}/memory", json=body)
        assert stored.status_code == 201, stored.text
        ids.append(stored.json()["id"])
    entities = client.get(f"{Z}/entities").json().get("entities", [])
    names = [e["name"] for e in entities if isinstance(e, dict) and isinstance(e.get("name"), str)]
    job = client.post(f"{Z}/consolidate").json().get("job_id")
    return (*ids, *names, *([job] if isinstance(job, str) else []), "lead", "acme", "Ada")


def _fuzz(world: HttpWorld, routes: tuple[Route, ...], failures: ErrorLog) -> None:
    words = world.words

    @fixed(EXAMPLES * len(routes))
    @given(st.data())
    def call(data: st.DataObject) -> None:
        route = data.draw(st.sampled_from(routes), label="route")
        path = route.path
        if "{}" in path:
            named = data.draw(st.sampled_from(words) | _strings(words), label="id")
            path = path.replace("{}", quote(named, safe=""))
        query = data.draw(_query(words), label="query") if route.query else []
        content = data.draw(_body(words), label="body") if route.body else None
        failures.seen.clear()
        response = world.client.request(
            route.method,
            Z + path,
            params=query,
            content=content,
            headers={"content-type": "application/json"} if content is not None else {},
        )
        shown = f"{route.method} {path} {query} {content!r:.200}: {response.status_code} {response.text:.300}"
        assert response.status_code < 500, shown
        assert not failures.seen, f"{shown}: {failures.seen}"
        assert response.headers.get("x-request-id")
        if response.status_code >= 400:  # zengram's body: an error, or consolidation's "skipped"
            refused = response.json()
            assert isinstance(refused.get("error"), str) or refused.get("status") == "skipped", shown

    call()


def test_no_request_breaks_the_api(world: HttpWorld, failures: ErrorLog) -> None:
    _fuzz(world, ROUTES, failures)
    assert world.client.get(f"{Z}/health").status_code == 200  # still serving
    stats = world.client.get(f"{Z}/stats")
    assert stats.status_code == 200 and stats.json()["total_memories"] >= 0


@pytest.mark.parametrize("world", ["embedded"], indirect=True)
def test_a_route_that_fails_is_caught(
    world: HttpWorld, failures: ErrorLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("cairn.services.zengram.api.ZengramApi.stats", fail)
    with pytest.raises(AssertionError, match="GET /stats"):
        _fuzz(world, (Route("GET", "/stats"),), failures)
