"""REST listings never cut silently: complete in one response, or paged with an announced cursor."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Message, MessageRole
from cairn.entrypoints.http import create_app
from cairn.services.documents import listing
from cairn.services.repositories import DocumentRepository
from tests.contract.conftest import RECORD_STORES
from tests.fakes.container import fake_adapters
from tests.integration.rest.helpers import assert_problem, docs_url, put
from tests.support.documents import WHEN, seed_documents

MANY = 10_050  # more than the protocol's 10,000 items per listing


@pytest.fixture(params=["memory", "sqlite"])
def stored(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[TestClient, Container, Brain]]:
    """A client on an app whose records live in the fake store or in SQLite, and a brain."""
    adapters = fake_adapters()
    if request.param == "sqlite":
        adapters = replace(adapters, records=SqliteRecordStore(tmp_path / "records.db"))
    container = build_container(Settings(data_dir=tmp_path / "data"), adapters)
    brain = container.brains.create("Notes", slug="notes")
    with TestClient(create_app(container), base_url="http://localhost") as client:
        yield client, container, brain


def _walk(client: TestClient, url: str, params: dict[str, Any]) -> list[httpx.Response]:
    """Every page of a listing, following `next_cursor` and checking the Link header says the same."""
    responses: list[httpx.Response] = []
    cursor: str | None = None
    for _ in range(100):
        response = client.get(url, params=params | ({"cursor": cursor} if cursor else {}))
        assert response.status_code == 200, response.text
        responses.append(response)
        cursor = response.json().get("next_cursor")
        if cursor is None:
            assert "link" not in response.headers
            return responses
        nxt = response.links["next"]["url"]
        assert httpx.URL(nxt).params["cursor"] == cursor
        assert httpx.URL(nxt).path == url
    raise AssertionError("the listing never ended")


def test_10050_documents_list_recursively_complete_across_pages(
    stored: tuple[TestClient, Container, Brain],
) -> None:
    # Given more documents than one listing may hold
    client, container, brain = stored
    paths = [f"notes/{i:05d}.md" for i in range(MANY)]
    seed_documents(container.documents.repo, brain.id, paths)
    # When they are listed recursively, following the announced cursor
    pages = _walk(client, docs_url("notes"), {"recursive": "true"})
    # Then two pages hold each path exactly once, in path order, and the first says more follows
    assert [len(r.json()["items"]) for r in pages] == [10_000, 50]
    listed = [item["path"] for r in pages for item in r.json()["items"]]
    assert listed == paths
    assert set(pages[0].json()) == {"items", "next_cursor"}
    assert set(pages[-1].json()) == {"items"}
    assert pages[0].headers["cache-control"] == "no-store"


@pytest.mark.parametrize("store", ["memory", "sqlite", "dynamodb"])
def test_listings_page_alike_on_every_record_store(request: pytest.FixtureRequest, store: str) -> None:
    # Given a tree with subdirectories, names sorting around `/`, and a deleted document
    paths = ["a-b.md", "a.md", "a/1.md", "a/2/3.md", "a0.md", "b/_gen.md", "b/x.md", "gone/x.md", "z.md"]
    with ExitStack() as stack:
        records = stack.enter_context(RECORD_STORES[store](request))
        repo = DocumentRepository(records)
        seed_documents(repo, "brn_any", paths, deleted=["gone/x.md"])
        expected = {
            False: ["a-b.md", "a.md", "a", "a0.md", "b", "z.md"],
            True: ["a-b.md", "a.md", "a/1.md", "a/2/3.md", "a0.md", "b/x.md", "z.md"],
        }
        for recursive, want in expected.items():
            for limit in (1, 2, 4):
                # When each listing is read `limit` entries at a time
                seen: list[str] = []
                cursor: str | None = None
                while True:
                    page = listing.entries(repo, "brn_any", recursive=recursive, limit=limit, cursor=cursor)
                    seen += [e.path for e in page.items]
                    if page.next_cursor is None:
                        break
                    assert len(page.items) == limit
                    cursor = page.next_cursor
                # Then every adapter gives the same entries, once each, in the same order
                assert seen == want, (store, recursive, limit)


def test_the_legacy_listing_pages_the_same_way(stored: tuple[TestClient, Container, Brain]) -> None:
    client, container, brain = stored
    paths = [f"p/{i:02d}.md" for i in range(9)]
    seed_documents(container.documents.repo, brain.id, paths)
    pages = _walk(client, docs_url("notes"), {"limit": 4})
    assert [[i["path"] for i in r.json()["items"]] for r in pages] == [paths[0:4], paths[4:8], paths[8:]]
    assert all("checksum_sha256" in i for r in pages for i in r.json()["items"])


def test_a_listing_that_fits_answers_without_a_cursor(client: TestClient, brain: Brain) -> None:
    for path in ["a.md", "d/b.md", "d/c.md"]:
        assert put(client, "notes", path, b"x").status_code == 204
    for params in ({"recursive": "true"}, {"dir": ""}, {}, {"recursive": "true", "limit": 3}):
        response = client.get(docs_url("notes"), params=params)
        assert response.status_code == 200
        assert set(response.json()) == {"items"}
        assert "link" not in response.headers


def test_small_pages_of_a_directory_listing(client: TestClient, brain: Brain) -> None:
    for path in ["m/a.md", "m/sub/x.md", "m/sub/y.md", "m/z.md", "m/_gen.md"]:
        assert put(client, "notes", path, b"x").status_code == 204
    pages = _walk(client, docs_url("notes"), {"dir": "m", "limit": 1})
    entries = [(i["path"], i["is_dir"]) for r in pages for i in r.json()["items"]]
    assert entries == [("m/a.md", False), ("m/sub", True), ("m/z.md", False)]


@pytest.mark.parametrize(
    "params",
    [
        {"recursive": "true", "cursor": "not-a-cursor!"},
        {"recursive": "true", "cursor": "ZnNvbWV3aGVyZS5tZA=="},  # padded
        {"dir": "d", "cursor": "Zm90aGVyL2EubWQ"},  # "fother/a.md": another directory's entry
        {"cursor": "ZGQ"},  # a directory cursor for the legacy listing
        {"recursive": "true", "limit": 0},
        {"recursive": "true", "limit": 10_001},
        {"recursive": "true", "cursor": ""},
    ],
)
def test_a_bad_cursor_or_limit_is_400_and_changes_nothing(
    client: TestClient, brain: Brain, params: dict[str, Any]
) -> None:
    for path in ["d/a.md", "d/b.md"]:
        assert put(client, "notes", path, b"x").status_code == 204
    before = client.get(docs_url("notes"), params={"recursive": "true"}).json()
    assert_problem(client.get(docs_url("notes"), params=params), 400, "validation_error")
    assert client.get(docs_url("notes"), params={"recursive": "true"}).json() == before


def test_brains_page_with_a_small_limit(client: TestClient) -> None:
    slugs = [client.post("/v1/brains", json={"name": f"Brain {i}"}).json()["slug"] for i in range(5)]
    pages = _walk(client, "/v1/brains", {"limit": 2})
    assert [[b["slug"] for b in r.json()["items"]] for r in pages] == [slugs[0:2], slugs[2:4], slugs[4:]]
    everything = client.get("/v1/brains").json()
    assert set(everything) == {"items"} and [b["slug"] for b in everything["items"]] == slugs
    assert_problem(client.get("/v1/brains", params={"cursor": "bogus!"}), 400, "validation_error")
    assert_problem(client.get("/v1/brains", params={"limit": 0}), 400, "validation_error")
    assert [b["slug"] for b in client.get("/v1/brains").json()["items"]] == slugs


def test_audit_pages_with_a_small_limit(client: TestClient) -> None:
    for i in range(5):
        assert client.post("/v1/brains", json={"name": f"Audited {i}"}).status_code == 201
    pages = _walk(client, "/v1/admin/audit", {"limit": 2})
    entries = [e for r in pages for e in r.json()["items"]]
    assert [len(r.json()["items"]) for r in pages] == [2, 2, 1]
    assert len({e["id"] for e in entries}) == 5
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    assert pages[-1].json()["next_cursor"] is None  # the audit page always carries the field
    assert_problem(client.get("/v1/admin/audit", params={"cursor": "bogus"}), 400, "validation_error")


def test_a_session_returns_every_message_beyond_one_store_page(
    container: Container, client: TestClient
) -> None:
    # Sessions are not paged: reading one returns all its messages, however many store pages they fill.
    brain = container.brains.create("Talks", slug="talks")
    session = container.sessions.create(brain)
    repo = container.sessions.repo
    for start in range(0, 2_500, 500):
        stored = repo.get(session.id)
        assert stored is not None
        repo.append(stored, [_message(session.id, brain.id, f"m{n}") for n in range(start, start + 500)])
    body = client.get(f"/v1/brains/talks/sessions/{session.id}").json()
    assert [m["content"] for m in body["messages"]] == [f"m{n}" for n in range(2_500)]


def _message(session_id: str, brain_id: str, content: str) -> Message:
    return Message(
        id=f"msg_{content}",
        session_id=session_id,
        brain_id=brain_id,
        role=MessageRole.user,
        content=content,
        created_at=WHEN,
    )


def test_the_openapi_document_announces_paging(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/v1/brains/{brainId}/documents", "/v1/brains", "/v1/admin/audit"):
        operation = spec["paths"][path]["get"]
        assert "Link" in operation["responses"]["200"]["headers"], path
        assert {"limit", "cursor"} <= {p["name"] for p in operation["parameters"]}, path
    for shape in ("FileList", "DocumentList", "BrainPage", "AuditPage"):
        assert "next_cursor" in spec["components"]["schemas"][shape]["properties"], shape
