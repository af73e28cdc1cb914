"""BrainService.first: the brain a surface's first write makes sits at a slug fixed for the caller,
so a second first write takes it rather than making another. Slugs are per tenant: another
tenant's brain at the slug changes nothing. A slug its tenant holds for a brain the caller may not
take (another owner's, an unmarked one) moves it to one named for its tenant, then to one hashed
from its tenant (and owner, for a private brain): fixed too, never a free suffix."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from cairn.auth import access
from cairn.auth.principal import SCOPES, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.errors import Forbidden
from cairn.domain.models import Brain, MetadataValue
from cairn.services.thoughtmcp.brain import thought_brain

ZENGRAM = ("Shared Brain", "shared-brain")


def as_admin(tenant: str, subject: str = "admin") -> Principal:
    return Principal(tenant, subject, frozenset(SCOPES), Via.api_key)


def first(
    c: Container,
    who: Principal | None,
    name: str,
    slug: str,
    visibility: str | None = None,
    metadata: dict[str, MetadataValue] | None = None,
    *,
    tenant_first: bool = False,
) -> Brain:
    """`first` as `who` does it in a write (the system when None)."""
    with access.acting_as(who, WRITE) if who is not None else nullcontext():
        return c.brains.first(name, slug, visibility=visibility, metadata=metadata, tenant_first=tenant_first)


def test_a_second_first_write_takes_the_brain_the_first_made(container: Container) -> None:
    made = first(container, None, *ZENGRAM, visibility="tenant")
    again = first(container, None, *ZENGRAM, visibility="tenant")

    assert made.slug == "shared-brain" and again.id == made.id
    assert [b.slug for b in container.brains.list()] == ["shared-brain"]


def test_each_tenant_gets_its_own_brain(container: Container) -> None:
    acme, beta = as_admin("acme"), as_admin("Beta Corp")
    mine = first(container, acme, *ZENGRAM, visibility="tenant")
    theirs = first(container, beta, *ZENGRAM, visibility="tenant")

    assert (mine.slug, theirs.slug) == ("shared-brain", "shared-brain")  # slugs are per tenant
    assert (mine.owner_tenant, theirs.owner_tenant) == ("acme", "Beta Corp")
    assert first(container, as_admin("acme", "someone-else"), *ZENGRAM, visibility="tenant").id == mine.id
    assert first(container, beta, *ZENGRAM, visibility="tenant").id == theirs.id


def test_slugs_held_by_brains_the_caller_may_not_take_move_it_to_a_fixed_hashed_one(
    container: Container,
) -> None:
    elsewhere = container.brains.create("Another tenant's", slug="shared-brain", visibility="public")
    with access.acting_as(as_admin("acme", "squatter"), WRITE):  # another owner's, of its tenant
        squatters = [
            container.brains.create("Not theirs", slug=slug, visibility="private")
            for slug in ("shared-brain", "shared-brain-acme")
        ]
    acme = as_admin("acme")

    made = first(container, acme, *ZENGRAM, visibility="tenant")
    again = first(container, acme, *ZENGRAM, visibility="tenant")

    assert made.id not in {b.id for b in [*squatters, elsewhere]} and made.owner_tenant == "acme"
    assert made.slug.startswith("shared-brain-") and len(made.slug) == len("shared-brain-") + 16
    assert again.id == made.id


def test_a_private_first_brain_is_one_per_owner(container: Container) -> None:
    alice, bob, carol = (as_admin("acme", name) for name in ("alice", "bob", "carol"))
    hers = first(container, alice, "default", "default")
    his = first(container, bob, "default", "default")
    carols = first(container, carol, "default", "default")

    assert (hers.slug, hers.owner) == ("default", "alice")
    assert (his.slug, his.owner) == ("default-acme", "bob")
    assert carols.owner == "carol" and carols.slug not in {"default", "default-acme", "default-2"}
    assert first(container, bob, "default", "default").id == his.id
    assert first(container, alice, "default", "default").id == hers.id
    assert first(container, carol, "default", "default").id == carols.id


def test_a_brain_without_the_marks_is_not_taken(container: Container) -> None:
    plain = container.brains.create("ThoughtMCP", slug="thoughtmcp", visibility="tenant")
    marked = first(container, None, "ThoughtMCP", "thoughtmcp", visibility="tenant", metadata={"mark": True})

    assert marked.id != plain.id and marked.metadata == {"mark": True}
    assert first(container, None, "ThoughtMCP", "thoughtmcp", "tenant", {"mark": True}).id == marked.id


def test_tenant_first_starts_another_tenant_at_a_slug_of_its_own(container: Container) -> None:
    thoughtmcp = ("ThoughtMCP", "thoughtmcp", "tenant", {"mark": True})
    acme = first(container, as_admin("acme"), *thoughtmcp, tenant_first=True)
    local = first(container, None, *thoughtmcp, tenant_first=True)

    assert (acme.slug, local.slug) == ("thoughtmcp-acme", "thoughtmcp")
    assert first(container, as_admin("acme", "other"), *thoughtmcp, tenant_first=True).id == acme.id


def test_a_first_remember_by_a_key_limited_to_other_brains_makes_no_brain(container: Container) -> None:
    marked = thought_brain(container.brains, None, create=True)  # the tenant's, made by the owner
    other = container.brains.create("Other", slug="other")
    limited = Principal(
        "local", "key:key_limited", frozenset(SCOPES), Via.api_key, brains=frozenset({other.id})
    )
    before = [b.slug for b in container.brains.list()]
    for _ in range(3):
        with access.acting_as(limited, WRITE), pytest.raises(Forbidden):
            thought_brain(container.brains, None, user_id="key:key_limited", create=True)
    assert [b.slug for b in container.brains.list()] == before  # a refused call changes nothing
    assert marked is not None and marked.slug in before
