"""Slugs per tenant, over HTTP on the embedded store and under moto: another tenant makes brains at
the slugs the owner holds (its public `alpha`, its private `bravo`) as at any free slug, each
tenant's slug then names its own brain on REST and MCP, and the owner's public brain stays
reachable by its id, which is how the other tenant's listing and gbrain name it."""

from __future__ import annotations

import pytest

from tests.support.live_world import Live, live

pytestmark = pytest.mark.anyio
__all__ = ["live"]


async def test_another_tenant_makes_brains_at_the_owners_slugs_and_each_names_its_own(live: Live) -> None:
    alpha, bravo = live.sets["A"].brain, live.sets["B"].brain
    made = {
        slug: live.rest("POST", "/v1/brains", who="other_tenant", json={"name": slug.title(), "slug": slug})
        for slug in ("alpha", "bravo", "charlie")
    }
    assert {slug: r.status_code for slug, r in made.items()} == {"alpha": 201, "bravo": 201, "charlie": 201}
    theirs = {slug: r.json()["id"] for slug, r in made.items()}
    again = live.rest("POST", "/v1/brains", who="other_tenant", json={"name": "Bravo", "slug": "bravo"})
    assert again.status_code == 409  # within its tenant a slug is still one brain's

    for slug, own in (("alpha", alpha.id), ("bravo", bravo.id)):
        assert live.rest("GET", f"/v1/brains/{slug}").json()["id"] == own
        assert live.rest("GET", f"/v1/brains/{slug}", who="other_tenant").json()["id"] == theirs[slug]
    assert live.rest("GET", f"/v1/brains/{alpha.id}", who="other_tenant").json()["slug"] == "alpha"
    assert live.rest("GET", f"/v1/brains/{bravo.id}", who="other_tenant").status_code == 404

    stored = await live.tool_json(
        "/mcp",
        "memory_remember",
        {"content": "acme keeps its own alpha", "brain": "alpha"},
        who="other_tenant",
    )
    assert stored["brain_id"] == theirs["alpha"]
    probe = live.sets["A"].probe
    found = await live.tool_json(
        "/mcp", "memory_search", {"query": probe, "brain": "alpha"}, who="other_tenant"
    )
    assert found["brain_id"] == theirs["alpha"]
    public = await live.tool_json(
        "/mcp", "memory_search", {"query": probe, "brain": alpha.id}, who="other_tenant"
    )
    assert public["brain_id"] == alpha.id and public["hits"]

    listed = live.rest("GET", "/v1/brains", who="other_tenant").json()["items"]
    assert sorted((b["slug"], b["id"]) for b in listed) == sorted([("alpha", alpha.id), *theirs.items()])
    collections = await live.tool_json("/mcp/gbrain", "brain_collections", {}, who="other_tenant")
    # acme's first brain is its default collection; the owner's public `alpha` is named by its id
    assert {c["name"] for c in collections} == {"default", "bravo", "charlie", alpha.id}
