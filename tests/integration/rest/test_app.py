"""The app around the routes: OpenAPI, health, and Problem+JSON for framework and unexpected errors."""

from __future__ import annotations

from unittest.mock import ANY

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.errors import CairnError
from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from tests.integration.rest.helpers import assert_problem, docs_url

ROUTES = {
    "/v1/brains": {"get", "post"},
    "/v1/brains/{brainId}": {"get"},
    "/v1/brains/{brainId}/documents": {"get", "head", "put", "delete", "post"},
    "/v1/brains/{brainId}/documents/read": {"get"},
    "/v1/brains/{brainId}/documents/stat": {"get"},
    "/v1/brains/{brainId}/documents/append": {"post"},
    "/v1/brains/{brainId}/documents/rename": {"post"},
    "/v1/brains/{brainId}/documents/batch-ops": {"post"},
    "/v1/brains/{brainId}/documents/ingest/file": {"post"},
    "/v1/brains/{brainId}/documents/ingest/url": {"post"},
    "/v1/brains/{brainId}/search": {"post"},
    "/v1/brains/{brainId}/events": {"get"},
}


def test_openapi_lists_every_route(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path, methods in ROUTES.items():
        assert path in spec["paths"], path
        assert methods <= set(spec["paths"][path]), path
    put_body = spec["paths"]["/v1/brains/{brainId}/documents"]["put"]["requestBody"]
    assert "application/octet-stream" in put_body["content"]
    batch = spec["paths"]["/v1/brains/{brainId}/documents/batch-ops"]["post"]["requestBody"]
    assert "ops" in batch["content"]["application/json"]["schema"]["properties"]


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_healthz_says_what_the_last_sweep_left_to_do(
    container: Container, client: TestClient, brain: Brain
) -> None:
    """Memory counts `over` and deletions settling, as the last sweep found them (no store is read
    by /healthz); the status stays ok, and an open server (this one) names the brains."""
    from cairn.bootstrap import index_sweeper
    from cairn.ports.records import Item
    from cairn.services.repositories import documents_pk

    container.documents.write(brain, "memories/fact/pump.md", b"The pump runs at 4 bar.")
    container.adapters.records.put(Item(documents_pk(brain.id), "memory-counts", {"over": True, "at": 0.0}))
    gone = container.brains.create("Gone", slug="gone")
    container.erasure.delete_brain(gone.id)
    assert "maintenance" not in client.get("/healthz").json()  # no sweep yet
    sweep = index_sweeper(container)
    container.documents.repo.counts.now = lambda: 60.0  # the retry not due: the mark stays
    sweep.tick()
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["maintenance"] == {
        "counts_over": 1,
        "counts_building": 0,
        "entries_building": 0,
        "deletions_settling": 1,
        "concept_reach_to_do": 0,  # the tick's pass scanned the one live brain
        "concept_reach_done": 1,
        "image_refs_to_do": 0,  # and the image-reference pass
        "image_refs_done": 1,
        "brains": {"counts_over": [brain.id], "deletions_settling": [gone.id]},
        "swept_at": ANY,  # the fake clock moves on each read: the tick's time
    }


def test_healthz_names_only_the_open_owners_brains(
    container: Container, client: TestClient, brain: Brain
) -> None:
    """An open server answers a caller without a credential as its owner (tenant `local`): the
    brains of another tenant (a token's, an API key's, a JWT's, beside the open owner) are
    counted in /healthz's maintenance but never named, live or being deleted."""
    from cairn.auth.access import acting_as
    from cairn.auth.principal import SCOPES, Principal, Via
    from cairn.bootstrap import index_sweeper
    from cairn.ports.records import Item
    from cairn.services.repositories import documents_pk

    acme = Principal("acme", "local", frozenset(SCOPES), Via.static_token)
    with acting_as(acme):
        theirs = container.brains.create("Acme plans", slug="acme-plans")
        gone = container.brains.create("Acme gone", slug="acme-gone")
    for each in (brain, theirs):
        container.documents.write(each, "memories/fact/pump.md", b"The pump runs at 4 bar.")
        container.adapters.records.put(
            Item(documents_pk(each.id), "memory-counts", {"over": True, "at": 0.0})
        )
    container.erasure.delete_brain(gone.id)
    container.documents.repo.counts.now = lambda: 60.0  # the retry not due: the marks stay
    index_sweeper(container).tick()
    said = client.get("/healthz").json()["maintenance"]
    assert said["counts_over"] == 2 and said["deletions_settling"] == 1
    assert said["brains"] == {"counts_over": [brain.id]}
    assert theirs.id not in str(said) and gone.id not in str(said)


def test_healthz_names_only_the_open_owners_rebuilds(
    container: Container, client: TestClient, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an open server a rebuild of another tenant's brain is listed, with its progress, but not
    named; the owner's (tenant `local`) is; a rebuild whose tenant is not known is not named."""
    from cairn.auth.access import acting_as
    from cairn.auth.principal import SCOPES, Principal, Via
    from cairn.services.documents.index_repair import IndexRepair
    from cairn.services.documents.rebuilding import Progress

    with acting_as(Principal("acme", "local", frozenset(SCOPES), Via.static_token)):
        theirs = container.brains.create("Acme plans", slug="acme-plans")
    repair = container.repair
    assert isinstance(repair, IndexRepair)
    monkeypatch.setattr(repair, "_attempt", lambda *_: None)  # the comparisons held: the marks stay
    repair.start(unchecked=[brain, theirs])  # each marked `checking`, as a start marks a big brain
    container.health.rebuilding.mark("brn_unknown", Progress(total=4))
    try:
        said = client.get("/healthz").json()
    finally:
        repair.stop()
    assert said["status"] == "rebuilding"
    assert [b.get("brain_id") for b in said["rebuilding"]] == [brain.id, None, None]
    assert theirs.id not in str(said) and "brn_unknown" not in str(said)


def test_unknown_route_and_method_are_problems(client: TestClient, brain: Brain) -> None:
    assert_problem(client.get("/v1/nothing-here"), 404, "not_found")
    response = client.patch(docs_url("notes"), params={"path": "a.md"})
    assert response.status_code == 405
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["status"] == 405


def test_unexpected_errors_are_500_without_internals(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("database password is hunter2")

    monkeypatch.setattr(container.documents, "read_or_link", boom)
    with TestClient(
        create_app(container), base_url="http://localhost", raise_server_exceptions=False
    ) as client:
        response = client.get(docs_url("notes", "/read"), params={"path": "a.md"})
    body = assert_problem(response, 500, "internal_error")
    assert "hunter2" not in response.text
    assert body["detail"] == "internal server error"


def test_bare_cairn_errors_do_not_leak_their_message(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> bytes:
        raise CairnError("sqlite at /secret/path is locked")

    monkeypatch.setattr(container.documents, "read_or_link", boom)
    with TestClient(create_app(container), base_url="http://localhost") as client:
        response = client.get(docs_url("notes", "/read"), params={"path": "a.md"})
    assert_problem(response, 500, "internal_error")
    assert "/secret/path" not in response.text
