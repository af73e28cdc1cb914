"""Slugs are unique within a tenant, not across tenants (services/brain_slugs.py), on every record
store: two tenants may each have a brain slugged `notes`, a create never tells one tenant that
another holds a slug, a slug names the caller's own brain first and another tenant's only when
that one is the single brain at the slug the caller may read, and a store an earlier release wrote
(one slug pointer for every tenant) keeps its slugs and is found by them once migrated."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, SCOPES, Principal, Via
from cairn.domain.errors import Conflict, Forbidden, NotFound
from cairn.domain.models import Brain
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.brain_slugs import legacy_slug_key, slug_key
from cairn.services.brains import BrainService
from cairn.services.migrations import migrate
from cairn.services.repositories import BrainRepository
from tests.fakes.clock import FakeClock


def admin(tenant: str, subject: str = "admin") -> Principal:
    return Principal(tenant, subject, frozenset(SCOPES), Via.api_key)


ACME, BETA, GAMMA = admin("acme"), admin("beta"), admin("gamma")


@pytest.fixture
def brains(records: RecordStore) -> BrainService:
    return BrainService(BrainRepository(records), FakeClock(), embedding_model="m", embedding_dim=8)


def make(brains: BrainService, who: Principal | None, slug: str | None, visibility: str = "tenant") -> Brain:
    with access.acting_as(who, ADMIN) if who is not None else nullcontext():
        return brains.create(slug.title() if slug else "Notes", slug=slug, visibility=visibility)


def get(brains: BrainService, who: Principal | None, ref: str) -> Brain:
    with access.acting_as(who, READ) if who is not None else nullcontext():
        return brains.get(ref)


def test_two_tenants_each_have_a_brain_at_one_slug(brains: BrainService) -> None:
    acme = make(brains, ACME, "notes", "private")
    beta = make(brains, BETA, "notes")  # no conflict: acme's private brain is nothing to beta
    unnamed = make(brains, GAMMA, None)  # a slug made from the name is not bent around others' either

    assert (acme.slug, beta.slug, unnamed.slug) == ("notes", "notes", "notes")
    assert get(brains, ACME, "notes") == acme and get(brains, BETA, "notes") == beta
    assert get(brains, GAMMA, "notes") == unnamed
    with pytest.raises(Conflict, match="already exists"):  # within a tenant a slug is still one brain's
        make(brains, admin("beta", "other"), "notes")
    with pytest.raises(NotFound):  # a tenant without it hears what it hears for any slug nobody holds
        get(brains, admin("delta"), "notes")


def test_a_slug_names_the_callers_own_brain_before_another_tenants_public_one(brains: BrainService) -> None:
    handbook = make(brains, ACME, "handbook", "public")
    assert get(brains, BETA, "handbook") == handbook  # the only one beta may read at that slug
    with access.acting_as(BETA, READ):  # named by its id all the same, so the name never shifts
        assert brains.ref_of(handbook) == handbook.id

    own = make(brains, BETA, "handbook")
    assert get(brains, BETA, "handbook") == own and get(brains, ACME, "handbook") == handbook
    with access.acting_as(BETA, READ):
        assert brains.ref_of(handbook) == handbook.id and brains.get(handbook.id) == handbook
        assert brains.ref_of(own) == "handbook"


def test_a_slug_several_other_tenants_hold_asks_for_the_id(brains: BrainService) -> None:
    ones = [make(brains, who, "handbook", "public") for who in (ACME, BETA)]
    make(brains, GAMMA, "handbook", "private")  # gamma's own private one: not gamma-the-caller's below

    with access.acting_as(admin("delta"), READ):
        with pytest.raises(Forbidden, match="name the brain by its id"):
            brains.get("handbook")
        assert [brains.get(b.id) for b in ones] == ones
        assert [brains.ref_of(b) for b in ones] == [b.id for b in ones]


def test_a_private_brain_of_another_tenant_neither_conflicts_nor_shows(brains: BrainService) -> None:
    secret = make(brains, ACME, "secret-plans", "private")
    with access.acting_as(BETA, READ), pytest.raises(NotFound) as hidden:
        brains.get("secret-plans")
    with access.acting_as(BETA, READ), pytest.raises(NotFound) as missing:
        brains.get("no-such-plans")
    assert str(hidden.value).replace("secret", "no-such") == str(missing.value)

    mine = make(brains, BETA, "secret-plans")
    assert mine.id != secret.id and get(brains, ACME, "secret-plans") == secret


def test_the_operator_names_the_local_brain_first_then_the_only_one(brains: BrainService) -> None:
    acme = make(brains, ACME, "notes")
    assert get(brains, None, "notes") == acme  # the only brain at that slug, whatever its tenant
    beta = make(brains, BETA, "notes")
    with pytest.raises(Forbidden, match="2 tenants"):
        get(brains, None, "notes")
    local = make(brains, None, "notes")
    assert get(brains, None, "notes") == local
    assert brains.for_key(["notes"], "beta") == [beta.id]  # a key's brains are named in its tenant
    with pytest.raises(NotFound):
        brains.for_key(["notes"], "delta")


def test_moving_a_brain_takes_its_slug_along_unless_the_tenant_has_it(brains: BrainService) -> None:
    moving = make(brains, ACME, "notes")
    held = make(brains, BETA, "notes")
    with pytest.raises(Conflict, match="already has a brain slugged notes"):
        brains.update(moving.id, tenant="beta")
    assert get(brains, ACME, "notes") == moving and get(brains, BETA, "notes") == held

    moved = brains.update(moving.id, tenant="gamma")
    assert get(brains, GAMMA, "notes") == moved
    with pytest.raises(NotFound):
        get(brains, ACME, "notes")
    assert make(brains, ACME, "notes").id != moved.id  # its slug is free in acme again


def as_an_earlier_release_left_it(records: RecordStore, brain: Brain) -> None:
    """One slug pointer for every tenant, as releases before per-tenant slugs kept it."""
    pointer = records.get(*slug_key(brain.slug, brain.owner_tenant))
    assert pointer is not None
    records.transact(
        [
            Delete(*slug_key(brain.slug, brain.owner_tenant)),
            Put(Item(*legacy_slug_key(brain.slug), pointer.data), 0),
        ]
    )


def test_a_store_an_earlier_release_wrote_keeps_its_slugs_and_is_found_once_migrated(
    brains: BrainService, records: RecordStore
) -> None:
    old = make(brains, ACME, "notes", "public")
    other = make(brains, BETA, "handbook")
    for brain in (old, other):
        as_an_earlier_release_left_it(records, brain)

    assert get(brains, ACME, old.id) == old and get(brains, BETA, other.id) == other  # by id at once
    assert brains.repo.by_slug("notes", "acme") is None  # by slug once migrated (or mended)
    with pytest.raises(Conflict):  # but the old pointer still holds the slug for acme's brain
        make(brains, ACME, "notes")
    assert make(brains, BETA, "notes").owner_tenant == "beta"  # and for no other tenant's

    assert "tenant-slugs" in migrate(records)

    for brain in (old, other):
        assert records.get(*legacy_slug_key(brain.slug)) is None
        assert brains.repo.by_slug(brain.slug, brain.owner_tenant) == brain
    assert get(brains, ACME, "notes") == old and get(brains, BETA, "handbook") == other
    with pytest.raises(Conflict):
        make(brains, ACME, "notes")
    assert make(brains, GAMMA, "notes").owner_tenant == "gamma"
    assert get(brains, BETA, "notes").owner_tenant == "beta"  # beta's own, made before the migration
    assert migrate(records) == []


def test_an_update_takes_over_the_pointer_an_earlier_release_left(
    brains: BrainService, records: RecordStore
) -> None:
    old = make(brains, ACME, "notes")
    as_an_earlier_release_left_it(records, old)

    with access.acting_as(ACME, ADMIN):
        updated = brains.update(old.id, visibility="public")
    assert records.get(*legacy_slug_key("notes")) is None
    assert brains.repo.by_slug("notes", "acme") == updated
    with pytest.raises(Conflict):
        make(brains, ACME, "notes")


def test_a_configured_default_slug_is_each_tenants_own(records: RecordStore) -> None:
    brains = BrainService(
        BrainRepository(records), FakeClock(), embedding_model="m", embedding_dim=8, default_brain="handbook"
    )
    ours = {who.tenant: make(brains, who, "handbook", "public") for who in (ACME, BETA)}
    delta = admin("delta")
    own = make(brains, delta, "notes")
    for who in (ACME, BETA, delta):  # delta has none: its own first brain, not one of two others'
        with access.acting_as(who, READ):
            assert brains.resolve(None) == ours.get(who.tenant, own)
