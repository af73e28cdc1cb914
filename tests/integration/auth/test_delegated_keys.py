"""A key whose list names brains may use them; it does not govern another subject's private brain
(change its owner or visibility, delete it), and it makes no brain of its own, which its list could
never name (auth/access.py `may_govern`, `creator`). What was made is named in the audit, and no
brain is named to a caller who gave no credential."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.auth.access import acting_as
from cairn.auth.authenticate import OPEN
from cairn.bootstrap import Container
from cairn.domain.models import Brain, MemoryType
from cairn.entrypoints.http import create_app
from cairn.services.documents.rebuilding import Progress
from cairn.services.memory.memory_model import MemoryInput
from tests.fakes.container import fake_container
from tests.integration.rest.helpers import assert_problem

TOKEN = "delegated-owner-token"
OWNER = {"authorization": f"Bearer {TOKEN}"}
BYTES = {"content-type": "application/octet-stream"}
ALL_SCOPES = ["documents:read", "documents:write", "brains:admin"]


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path, token=TOKEN)


@pytest.fixture
def client(container: Container) -> Iterator[TestClient]:
    with TestClient(create_app(container), base_url="http://localhost") as c:
        yield c


def _brain(container: Container, slug: str, visibility: str = "private") -> Brain:
    with acting_as(OPEN):  # the machine's owner, as the static token's holder is
        return container.brains.create(slug.title(), slug=slug, visibility=visibility)


def _key_for(container: Container, brain: Brain) -> dict[str, str]:
    key = container.keys.create(name="delegate", tenant="local", scopes=ALL_SCOPES, brains=[brain.id])
    return {"authorization": f"Bearer {key.plaintext}"}


def test_a_key_naming_the_owners_private_brain_uses_it_but_does_not_govern_it(
    container: Container, client: TestClient
) -> None:
    # Given the owner's private brain and an admin key limited to it
    diary = _brain(container, "diary")
    delegate = _key_for(container, diary)
    url = f"/v1/brains/{diary.id}"
    # Then the key reads and writes there
    note = b"# A\n\nthe delegate wrote this"
    put = client.put(f"{url}/documents?path=notes/a.md", content=note, headers={**delegate, **BYTES})
    assert put.status_code == 204, put.text
    assert client.get(url, headers=delegate).status_code == 200
    # But it may not open the brain to others, give it away, or delete it
    assert_problem(client.patch(url, json={"visibility": "public"}, headers=delegate), 403, "forbidden")
    assert_problem(client.patch(url, json={"owner": "key:delegate"}, headers=delegate), 403, "forbidden")
    assert_problem(client.delete(url, headers=delegate), 403, "forbidden")
    # And nothing changed: the owner still holds it, private, with the delegate's note in it
    held = container.brains.get(diary.id)  # as the operator: the record itself
    assert (held.visibility.value, held.owner, held.deleted_at) == ("private", "local", None)
    assert client.get(f"{url}/documents?path=notes/a.md", headers=OWNER).status_code == 200
    # while its owner may
    assert client.patch(url, json={"visibility": "tenant"}, headers=OWNER).status_code == 200


def test_a_key_naming_a_shared_brain_governs_it_as_its_tenants_admins_do(
    container: Container, client: TestClient
) -> None:
    team = _brain(container, "team", visibility="tenant")
    delegate = _key_for(container, team)
    changed = client.patch(f"/v1/brains/{team.id}", json={"visibility": "public"}, headers=delegate)
    assert changed.status_code == 200, changed.text
    assert changed.json()["visibility"] == "public"


def test_a_key_limited_to_some_brains_makes_no_brain(container: Container, client: TestClient) -> None:
    diary = _brain(container, "diary")
    delegate = _key_for(container, diary)
    refused = client.post("/v1/brains", json={"name": "Squatted", "slug": "squatted"}, headers=delegate)
    assert_problem(refused, 403, "forbidden")
    # the slug stays free for the tenant
    made = client.post("/v1/brains", json={"name": "Squatted", "slug": "squatted"}, headers=OWNER)
    assert made.status_code == 201, made.text


def test_an_owner_that_would_display_as_another_is_refused(container: Container, client: TestClient) -> None:
    diary = _brain(container, "diary")
    forged = client.patch(f"/v1/brains/{diary.id}", json={"owner": "al\u202eecila"}, headers=OWNER)
    assert_problem(forged, 400, "validation_error")
    assert container.brains.get(diary.id).owner == "local"


def test_the_audit_names_the_brain_and_the_key_a_request_made(client: TestClient) -> None:
    made = client.post("/v1/brains", json={"name": "Audited", "slug": "audited"}, headers=OWNER)
    assert made.status_code == 201, made.text
    body = {"name": "reader", "scopes": ["documents:read"], "brains": [made.json()["id"]]}
    key = client.post("/v1/admin/keys", json=body, headers=OWNER)
    assert key.status_code == 201, key.text
    entries = client.get("/v1/admin/audit", headers=OWNER).json()["items"]
    by_action = {e["action"]: e for e in entries}
    assert by_action["rest.create_brain"]["brain_id"] == made.json()["id"]
    assert by_action["rest.create_key"]["target"] == key.json()["id"]
    assert key.json()["key"] not in str(entries)  # never the secret


def test_healthz_tells_no_stranger_which_brains_are_rebuilding(
    container: Container, client: TestClient
) -> None:
    # Given a brain of a server that asks for credentials, being rebuilt
    diary = _brain(container, "diary")
    container.health.rebuilding.mark(diary.id, Progress(total=10, done=3))
    # Then /healthz, which asks for none, says how far the rebuild has got but not which brain it is
    health = client.get("/healthz").json()
    assert health["status"] == "rebuilding"
    assert [(b["done"], b["total"]) for b in health["rebuilding"]] == [(3, 10)]
    assert diary.id not in str(health) and "brain_id" not in health["rebuilding"][0]


def test_healthz_counts_the_sweeps_work_but_names_no_brain_to_anybody(
    container: Container, client: TestClient
) -> None:
    """On a server that asks for credentials /healthz's maintenance is counts alone, to a caller
    without a credential and to the owner sending its token alike (the route reads none)."""
    from cairn.bootstrap import index_sweeper
    from cairn.ports.records import Item
    from cairn.services.repositories import documents_pk

    diary = _brain(container, "diary")
    container.documents.write(diary, "memories/fact/pump.md", b"The pump runs at 4 bar.")
    container.adapters.records.put(Item(documents_pk(diary.id), "memory-counts", {"over": True, "at": 0.0}))
    container.documents.repo.counts.now = lambda: 60.0  # the retry not due: the mark stays
    index_sweeper(container).tick()
    for headers in ({}, OWNER):
        health = client.get("/healthz", headers=headers).json()
        assert health["maintenance"]["counts_over"] == 1
        assert "brains" not in health["maintenance"] and diary.id not in str(health)


def test_an_erasure_receipt_answers_only_to_who_may_read_every_brain_it_names(
    container: Container, client: TestClient
) -> None:
    # Given the owner's private brain and a tenant brain, each holding a memory of agent-x
    diary, team = _brain(container, "diary"), _brain(container, "team", visibility="tenant")
    with acting_as(OPEN):
        for brain in (diary, team):
            container.memories.store(
                brain, MemoryInput(type=MemoryType.fact, content="x", source_agent="agent-x")
            )
    admin_key = container.keys.create(name="admin", tenant="local", scopes=ALL_SCOPES)
    admin = {"authorization": f"Bearer {admin_key.plaintext}"}  # the tenant's admin, not the diary's owner

    def erased_in(brain: Brain) -> str:
        body = {"kind": "source_agent", "subject": "agent-x", "brains": [brain.id]}
        done = client.post("/v1/erasures", json=body, headers=OWNER)
        assert done.status_code == 200, done.text
        return str(done.json()["id"])

    private, shared = erased_in(diary), erased_in(team)
    # Then the owner reads both; the tenant's admin only the one whose brain it may read
    assert client.get(f"/v1/erasures/{private}", headers=OWNER).status_code == 200
    assert_problem(client.get(f"/v1/erasures/{private}", headers=admin), 404, "not_found")
    assert client.get(f"/v1/erasures/{shared}", headers=admin).status_code == 200
