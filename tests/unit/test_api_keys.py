"""API keys: stored only as hashes, each with a tenant, scopes and optionally its brains."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.api_keys import KEYS_PK, ApiKeyService
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.domain.errors import Forbidden, InvalidInput, NotFound
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_container
from tests.fakes.records import MemoryRecordStore


@pytest.fixture
def keys() -> ApiKeyService:
    return ApiKeyService(MemoryRecordStore(), FakeClock())


def test_a_created_key_authenticates_as_its_tenant_with_its_scopes_and_brains(keys: ApiKeyService) -> None:
    created = keys.create(name="ci bot", tenant="acme", scopes=[READ, WRITE], brains=["brn_a"])

    principal = keys.authenticate(created.plaintext)

    assert principal is not None
    assert (principal.tenant, principal.via) == ("acme", Via.api_key)
    assert principal.subject == f"key:{created.key.id}"
    assert principal.scopes == frozenset({READ, WRITE}) and principal.brains == frozenset({"brn_a"})
    assert created.plaintext.startswith(f"cairn_{created.key.id}_")


def test_only_a_hash_of_the_key_is_stored(keys: ApiKeyService) -> None:
    created = keys.create(name="ci", tenant="acme", scopes=[READ])

    stored = keys.records.query(KEYS_PK, "key#").items
    secret = created.plaintext.removeprefix(f"cairn_{created.key.id}_")
    assert len(secret) == 43

    assert len(stored) == 1 and secret not in repr(stored[0].data)
    assert stored[0].data["key_sha256"] != created.plaintext and len(stored[0].data["key_sha256"]) == 64


def test_a_key_without_brains_is_not_limited_to_any(keys: ApiKeyService) -> None:
    principal = keys.authenticate(keys.create(name="ops", tenant="acme", scopes=[ADMIN]).plaintext)
    assert principal is not None and principal.brains is None


@pytest.mark.parametrize(
    "presented",
    ["", "Bearer x", "cairn_key_x_y", "not-a-key", "cairn_key_01m80x4bc2sr9b7zb6nrchstdj_" + "A" * 43],
)
def test_unknown_or_malformed_keys_do_not_authenticate(keys: ApiKeyService, presented: str) -> None:
    keys.create(name="ci", tenant="acme", scopes=[READ])
    assert keys.authenticate(presented) is None


def test_a_key_with_a_changed_secret_does_not_authenticate(keys: ApiKeyService) -> None:
    created = keys.create(name="ci", tenant="acme", scopes=[READ])
    last = created.plaintext[-1]
    forged = created.plaintext[:-1] + ("A" if last != "A" else "B")
    assert keys.authenticate(forged) is None


def test_a_revoked_key_stops_working_and_revoking_again_is_harmless(keys: ApiKeyService) -> None:
    created = keys.create(name="ci", tenant="acme", scopes=[READ])

    revoked = keys.revoke(created.key.id)
    again = keys.revoke(created.key.id)

    assert keys.authenticate(created.plaintext) is None
    assert revoked.revoked_at is not None and again.revoked_at == revoked.revoked_at


def test_listing_filters_by_tenant_and_never_shows_keys(keys: ApiKeyService) -> None:
    a = keys.create(name="a", tenant="acme", scopes=[READ])
    keys.create(name="b", tenant="globex", scopes=[READ])

    listed = keys.list("acme")

    assert [k.id for k in listed] == [a.key.id] and len(keys.list()) == 2
    assert a.plaintext not in repr(listed)


@pytest.mark.parametrize(
    ("name", "tenant", "scopes", "brains"),
    [
        ("", "acme", [READ], None),
        ("ci", "", [READ], None),
        ("ci", "acme", [], None),
        ("ci", "acme", ["documents:delete"], None),
        ("ci", "acme", [READ], [""]),
    ],
)
def test_bad_input_is_refused_and_stores_nothing(
    keys: ApiKeyService, name: str, tenant: str, scopes: list[str], brains: list[str] | None
) -> None:
    with pytest.raises(InvalidInput):
        keys.create(name=name, tenant=tenant, scopes=scopes, brains=brains)
    assert keys.list() == []


def test_an_empty_brain_list_is_a_key_that_reads_no_brain(keys: ApiKeyService) -> None:
    made = keys.create(name="nothing", tenant="acme", scopes=[READ], brains=[])
    principal = keys.authenticate(made.plaintext)
    assert principal is not None and principal.brains == frozenset()


def test_revoking_an_unknown_key_is_not_found(keys: ApiKeyService) -> None:
    with pytest.raises(NotFound):
        keys.revoke("key_01m80x4bc2sr9b7zb6nrchstdj")
    with pytest.raises(NotFound):
        keys.revoke("../etc")


def test_revoking_by_the_key_itself_quotes_none_of_it(keys: ApiKeyService) -> None:
    made = keys.create(name="pasted", tenant="acme", scopes=["documents:read"])
    secret = made.plaintext.rsplit("_", 1)[-1]
    with pytest.raises(NotFound) as refused:
        keys.revoke(made.plaintext)
    message = refused.value.message
    assert "not the key" in message
    assert not any(secret[i : i + 6] in message for i in range(len(secret) - 5))
    assert keys.authenticate(made.plaintext) is not None  # nothing revoked


def test_the_settings_take_a_key_read_from_a_file_and_refuse_one_that_cannot_be_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pydantic import ValidationError

    from cairn.config import Settings

    for name in ("CAIRN_TOKEN", "CAIRN_GENERATOR_API_KEY", "CAIRN_RERANKER_API_KEY"):
        monkeypatch.setenv(name, "sk-proj-SECRETvalue123\r\n")
        read = Settings()
        field = name.removeprefix("CAIRN_").lower()
        assert getattr(read, field).get_secret_value() == "sk-proj-SECRETvalue123"
        for bad in ("sk-proj-SECRET value", "sk-proj-SECRET\nvalue", "sk-proj-SECRETvalue\u201d"):
            monkeypatch.setenv(name, bad)
            with pytest.raises(ValidationError) as refused:
                Settings()
            assert "printable ASCII" in str(refused.value) and "SECRET" not in str(refused.value)
        monkeypatch.delenv(name)


def test_revoking_within_a_tenant_does_not_reach_another_tenants_key(keys: ApiKeyService) -> None:
    theirs = keys.create(name="theirs", tenant="beta", scopes=["documents:read"])
    with pytest.raises(NotFound, match="API key not found"):
        keys.revoke(theirs.key.id, tenant="acme")
    assert keys.authenticate(theirs.plaintext) is not None  # still working
    assert keys.revoke(theirs.key.id, tenant="beta").revoked_at is not None


LIMITED_ADMIN = Principal(
    "acme", "key:limited", frozenset({READ, WRITE, ADMIN}), Via.api_key, frozenset({"brn_a"})
)


def test_a_key_never_reaches_further_than_the_key_that_made_it(keys: ApiKeyService) -> None:
    with access.acting_as(LIMITED_ADMIN, ADMIN):
        unnamed = keys.create(name="child", tenant="acme", scopes=[READ])
        assert unnamed.key.brains == ["brn_a"]  # no list named: its creator's, not the whole tenant
        with pytest.raises(Forbidden):
            keys.create(name="wider", tenant="acme", scopes=[READ], brains=["brn_a", "brn_b"])
    reader_admin = Principal("acme", "key:ra", frozenset({READ, ADMIN}), Via.api_key, None)
    with access.acting_as(reader_admin, ADMIN), pytest.raises(Forbidden, match="scope its creator lacks"):
        keys.create(name="writer", tenant="acme", scopes=[READ, WRITE])
    assert [k.name for k in keys.list("acme")] == ["child"]


def test_a_key_limited_to_some_brains_sees_and_revokes_only_keys_limited_to_them(keys: ApiKeyService) -> None:
    tenant_wide = keys.create(name="tenant-wide", tenant="acme", scopes=[READ]).key
    of_b = keys.create(name="of-b", tenant="acme", scopes=[READ], brains=["brn_b"]).key
    of_a = keys.create(name="of-a", tenant="acme", scopes=[READ], brains=["brn_a"]).key
    with access.acting_as(LIMITED_ADMIN, ADMIN):
        assert [k.id for k in keys.list("acme")] == [of_a.id]
        for other in (tenant_wide, of_b):
            with pytest.raises(NotFound):
                keys.revoke(other.id, tenant="acme")
        assert keys.revoke(of_a.id, tenant="acme").revoked_at is not None
    assert {k.id for k in keys.list("acme") if k.revoked_at is None} == {tenant_wide.id, of_b.id}


def test_a_key_limited_to_another_members_private_brain_is_hidden_from_other_admins(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    alice = Principal("acme", "alice", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    bob = Principal("acme", "bob", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(alice, ADMIN):
        diary = container.brains.create("Diary")  # private: alice's alone
        shared = container.brains.create("Team", visibility="tenant")
        secret = container.keys.create(name="diary-bot", tenant="acme", scopes=[READ], brains=[diary.id])
        team = container.keys.create(name="team-bot", tenant="acme", scopes=[READ], brains=[shared.id])
        both = container.keys.create(name="both", tenant="acme", scopes=[READ], brains=[shared.id, diary.id])
        assert {k.id for k in container.keys.list("acme")} >= {secret.key.id, team.key.id, both.key.id}
    with access.acting_as(bob, ADMIN):
        seen = {k.id for k in container.keys.list("acme")}
        for hidden in (secret, both):  # answered as a key that does not exist
            with pytest.raises(NotFound, match="API key not found"):
                container.keys.revoke(hidden.key.id, tenant="acme")
    assert team.key.id in seen and secret.key.id not in seen and both.key.id not in seen
    assert container.keys.authenticate(secret.plaintext) is not None  # still alice's to revoke
