"""A principal's brains come from its tenant's pointers and the public ones (services/brain_pointers.py)
on every record store: its listing and default brain never read another tenant's brain records
beyond the public ones, and stay right as brains are handed over, made private or public,
deleted, or were written by a release that kept no pointers (services/migrations.py)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, SCOPES, WRITE, Principal, Via
from cairn.domain import ids
from cairn.domain.errors import NoBrain
from cairn.domain.models import Brain
from cairn.ports.records import Delete, Item, Page, Put, RecordStore, ScanPage
from cairn.services import brain_pointers
from cairn.services.brain_slugs import slug_key
from cairn.services.brains import BrainService
from cairn.services.migrations import MARKER, migrate
from cairn.services.repositories import BRAINS_PK, BrainRepository, brain_key
from tests.fakes.clock import FakeClock

real_ns = ids.time.time_ns
POINTER_PKS = (brain_pointers.tenant_pk("acme"), brain_pointers.tenant_pk("beta"), brain_pointers.PUBLIC_PK)


@dataclass
class Reads:
    """A RecordStore that notes which partitions were queried and which brain records read."""

    inner: RecordStore
    queried: list[str] = field(default_factory=list)
    brain_reads: list[str] = field(default_factory=list)

    def get(self, pk: str, sk: str) -> Item | None:
        self._note([(pk, sk)])
        return self.inner.get(pk, sk)

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        self._note(keys)
        return self.inner.get_many(keys)

    def put(self, item: Item, expected_version: int | None = None) -> Item:
        return self.inner.put(item, expected_version)

    def delete(self, pk: str, sk: str, expected_version: int | None = None) -> bool:
        return self.inner.delete(pk, sk, expected_version)

    def query(self, pk: str, prefix: str = "", **kwargs: Any) -> Page:
        self.queried.append(pk)
        return self.inner.query(pk, prefix, **kwargs)

    def transact(self, ops: Sequence[Put | Delete]) -> list[Item]:
        return self.inner.transact(ops)

    def scan(self, prefixes: Sequence[str], *, cursor: str | None = None, limit: int = 1000) -> ScanPage:
        return self.inner.scan(prefixes, cursor=cursor, limit=limit)

    def _note(self, keys: Sequence[tuple[str, str]]) -> None:
        self.brain_reads += [sk.removeprefix("brain#") for pk, sk in keys if pk == BRAINS_PK]

    def forget(self) -> None:
        self.queried.clear()
        self.brain_reads.clear()


def admin(tenant: str, subject: str = "admin", brains: frozenset[str] | None = None) -> Principal:
    return Principal(tenant, subject, frozenset(SCOPES), Via.api_key, brains)


def member(tenant: str, subject: str) -> Principal:
    return Principal(tenant, subject, frozenset({READ, WRITE}), Via.jwt)


@pytest.fixture
def reads(records: RecordStore) -> Reads:
    return Reads(records)


@pytest.fixture
def service(reads: Reads) -> BrainService:
    return BrainService(BrainRepository(reads), FakeClock(), embedding_model="m", embedding_dim=8)


def make(service: BrainService, who: Principal | None, name: str, visibility: str = "tenant") -> Brain:
    with access.acting_as(who, ADMIN) if who is not None else nullcontext():
        return service.create(name, visibility=visibility)


def test_listing_and_default_read_only_the_tenants_and_the_public_brains(
    service: BrainService, reads: Reads
) -> None:
    acme, beta = admin("acme"), admin("beta")
    a1, a2 = make(service, acme, "Acme one"), make(service, acme, "Acme two", "private")
    b_tenant, b_public = make(service, beta, "Beta notes"), make(service, beta, "Beta handbook", "public")
    b_private = make(service, beta, "Beta secrets", "private")
    reads.forget()

    with access.acting_as(acme, READ):
        assert service.list() == [a1, a2, b_public]
        assert service.resolve(None) == a1
    with access.acting_as(member("acme", "ann"), READ):  # a2 is the admin's own private brain
        assert service.list() == [a1, b_public]
        first, cursor = service.page(limit=1)
        assert first == [a1] and cursor is not None
        assert service.page(limit=1, cursor=cursor) == ([b_public], None)

    assert BRAINS_PK not in reads.queried  # no walk over every brain of every tenant
    assert {b_tenant.id, b_private.id}.isdisjoint(reads.brain_reads)
    with access.acting_as(beta, READ):
        assert service.list() == [b_tenant, b_public, b_private]
        assert service.resolve(None) == b_tenant


def test_a_key_limited_to_brains_reads_only_those(service: BrainService, reads: Reads) -> None:
    acme = admin("acme")
    mine = [make(service, acme, f"Acme {n}") for n in range(4)]
    other = make(service, admin("beta"), "Beta handbook", "public")
    key = admin("acme", "key:k", frozenset({mine[2].id, other.id, "brn_gone"}))
    reads.forget()

    with access.acting_as(key, WRITE):
        assert service.list() == [mine[2], other]
        assert service.resolve(None) == mine[2]  # the public brain of another tenant is no default
    assert set(reads.brain_reads) <= {mine[2].id, other.id, "brn_gone"}


def test_pointers_follow_handover_visibility_and_deletion(service: BrainService, reads: Reads) -> None:
    acme, beta = admin("acme"), admin("beta")
    moved = make(service, acme, "Moving")
    stays = make(service, acme, "Staying")
    public = make(service, beta, "Beta handbook", "public")

    service.update(moved.slug, tenant="beta")  # the operator hands it over
    with access.acting_as(acme, READ):
        assert service.list() == [stays, public]
        assert service.resolve(None) == stays
    with access.acting_as(beta, READ):
        assert [b.slug for b in service.list()] == ["moving", "beta-handbook"]
        assert service.resolve(None).slug == "moving"

    with access.acting_as(beta, ADMIN):
        service.update(public.slug, visibility="tenant")
    with access.acting_as(acme, READ):
        assert service.list() == [stays]
    with access.acting_as(beta, ADMIN):
        service.update(public.slug, visibility="public")
    with access.acting_as(acme, READ):
        assert service.list() == [stays, service.repo.get(public.id)]

    for brain in (stays, public):  # deleted, as an erasure marks a brain it is deleting
        service.repo.update(brain.id, lambda b: b.model_copy(update={"deleted_at": b.updated_at}))
    with access.acting_as(acme, READ):
        assert service.list() == []
        with pytest.raises(NoBrain):
            service.resolve(None)
    left = {(pk, item.sk) for pk in POINTER_PKS for item in reads.inner.query(pk).items}
    assert left == {(brain_pointers.tenant_pk("beta"), f"brain#{moved.id}")}


def test_brains_stored_without_pointers_are_found_after_the_migration(service: BrainService) -> None:
    records = service.repo.records
    acme = admin("acme")
    old = [make(service, acme, "Old one"), make(service, acme, "Old public", "public")]
    gone = make(service, acme, "Old deleted")
    service.repo.update(gone.id, lambda b: b.model_copy(update={"deleted_at": b.updated_at}))
    records.delete(*slug_key(gone.slug, "acme"))  # its slug freed, as a brain deletion leaves it...
    taken = make(service, acme, "Old deleted")  # ...and taken by another brain of its tenant
    assert taken.slug == gone.slug
    for pk in POINTER_PKS:
        for item in records.query(pk).items:  # as a release that kept no pointers left the store
            records.delete(item.pk, item.sk)
    with access.acting_as(acme, READ):
        assert service.list() == []

    assert "brain-pointers" in migrate(records)

    with access.acting_as(acme, READ):
        assert service.list() == [*old, taken]
        assert service.resolve(None) == old[0]
    with access.acting_as(admin("beta"), READ):
        assert service.list() == [old[1]]
    assert service.repo.by_slug(gone.slug, "acme") == taken  # the deleted brain did not take its slug back
    assert records.get(*MARKER) is not None
    assert migrate(records) == []


def test_an_update_of_a_deleted_brain_leaves_its_former_slug_to_its_new_holder(service: BrainService) -> None:
    gone = make(service, None, "Notes")
    service.repo.update(gone.id, lambda b: b.model_copy(update={"deleted_at": b.updated_at}))
    service.repo.records.delete(*slug_key(gone.slug, gone.owner_tenant))
    now_holder = make(service, None, "Notes")

    service.repo.update(gone.id, lambda b: b.model_copy(update={"name": "(deleted)"}))

    assert service.repo.by_slug("notes", "local") == now_holder
    assert service.repo.records.get(*brain_key(gone.id)) is not None


def test_any_update_of_a_brain_writes_its_missing_pointers_again(service: BrainService) -> None:
    acme = admin("acme")
    brain = make(service, acme, "Made mid-deploy", "public")
    for pk in (brain_pointers.tenant_pk("acme"), brain_pointers.PUBLIC_PK):  # as the older release made it
        service.repo.records.delete(pk, f"brain#{brain.id}")
    with access.acting_as(acme, READ):
        assert service.list() == []

    with access.acting_as(acme, ADMIN):
        service.update(brain.slug, visibility="public")

    with access.acting_as(acme, READ):
        assert [b.id for b in service.list()] == [brain.id]
    with access.acting_as(admin("beta"), READ):
        assert [b.id for b in service.list()] == [brain.id]


def test_brains_an_older_process_wrote_after_the_migration_are_mended(service: BrainService) -> None:
    acme = admin("acme")
    migrate(service.repo.records)
    kept = make(service, acme, "Kept")
    lost = [make(service, acme, "Made by the old process"), make(service, acme, "Made public", "public")]
    gone = make(service, acme, "Deleted")
    service.repo.update(gone.id, lambda b: b.model_copy(update={"deleted_at": b.updated_at}))
    records = service.repo.records
    records.delete(brain_pointers.tenant_pk("acme"), f"brain#{lost[0].id}")
    records.delete(brain_pointers.PUBLIC_PK, f"brain#{lost[1].id}")
    with access.acting_as(admin("beta"), READ):
        assert service.list() == []  # the public one is missing from the public listing

    assert [b.id for b in service.mend_pointers()] == [b.id for b in lost]

    with access.acting_as(acme, READ):
        assert [b.id for b in service.list()] == [kept.id, *(b.id for b in lost)]
    with access.acting_as(admin("beta"), READ):
        assert [b.id for b in service.list()] == [lost[1].id]
    assert service.mend_pointers() == []


def test_a_mend_of_recent_brains_mends_only_brains_made_within_its_window(
    service: BrainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    acme = admin("acme")
    monkeypatch.setattr(ids, "_last", (0, 0))  # ids are monotonic per process: restored after
    monkeypatch.setattr(ids.time, "time_ns", lambda: real_ns() - 3_600_000_000_000)
    old = make(service, acme, "Made an hour ago")
    monkeypatch.setattr(ids.time, "time_ns", real_ns)
    recent = make(service, acme, "Made now")
    for brain in (old, recent):
        service.repo.records.delete(brain_pointers.tenant_pk("acme"), f"brain#{brain.id}")

    assert [b.id for b in service.mend_pointers(made_within_s=60)] == [recent.id]
    assert [b.id for b in service.mend_pointers(made_within_s=2 * 3600)] == [old.id]
    assert service.mend_pointers() == []
    with access.acting_as(acme, READ):
        assert [b.id for b in service.list()] == [old.id, recent.id]
