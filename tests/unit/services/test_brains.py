from __future__ import annotations

import pytest

from cairn.auth import access
from cairn.auth.access import LOCAL_OWNER, LOCAL_TENANT
from cairn.auth.principal import ADMIN, READ, SCOPES, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.errors import Conflict, InvalidInput, NoBrain, NotFound
from tests.fakes.container import fake_container


def test_slug_is_generated_from_the_name_and_made_unique(container: Container) -> None:
    first = container.brains.create("My Notes!")
    second = container.brains.create("My Notes!")
    assert first.slug == "my-notes"
    assert second.slug == "my-notes-2"
    assert first.visibility.value == "private"


def test_explicit_slug_must_match_the_pattern_and_be_free(container: Container) -> None:
    container.brains.create("A", slug="alpha")
    with pytest.raises(Conflict):
        container.brains.create("B", slug="alpha")
    with pytest.raises(InvalidInput):
        container.brains.create("C", slug="-bad")
    with pytest.raises(InvalidInput):
        container.brains.create("C", slug="Upper")
    with pytest.raises(InvalidInput):
        container.brains.create("", slug="empty-name")
    with pytest.raises(InvalidInput):
        container.brains.create("D", visibility="secret")
    assert [b.slug for b in container.brains.list()] == ["alpha"]


def test_get_accepts_id_or_slug(container: Container) -> None:
    brain = container.brains.create("Work", slug="work")
    assert container.brains.get("work").id == brain.id
    assert container.brains.get(brain.id).slug == "work"
    with pytest.raises(NotFound):
        container.brains.get("nope")


def test_resolve_prefers_argument_then_default_then_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    c = fake_container(tmp_path)
    with pytest.raises(NoBrain):
        c.brains.resolve(None)
    first = c.brains.create("First", slug="first")
    c.brains.create("Second", slug="second")
    assert c.brains.resolve(None).id == first.id
    assert c.brains.resolve("second").slug == "second"
    with pytest.raises(NoBrain):
        c.brains.resolve("missing")

    configured = fake_container(tmp_path, default_brain="second")
    configured.brains.create("First", slug="first")
    configured.brains.create("Second", slug="second")
    assert configured.brains.resolve(None).slug == "second"


def test_a_configured_default_that_is_gone_leaves_each_caller_its_own(tmp_path) -> None:  # type: ignore[no-untyped-def]
    c = fake_container(tmp_path, default_brain="shared")
    acme = Principal("acme", "admin", frozenset(SCOPES), Via.api_key)
    beta = Principal("beta", "admin", frozenset(SCOPES), Via.api_key)
    with access.acting_as(acme, ADMIN):
        c.brains.create("Shared", slug="shared")
    with access.acting_as(beta, ADMIN):
        own = c.brains.create("Beta notes", slug="beta-notes")
    with access.acting_as(beta, WRITE):
        assert c.brains.resolve(None) == own  # another tenant's configured default: its own
    c.brains.repo.update(  # acme deletes its brain, as an erasure marks it
        c.brains.get("shared").id, lambda b: b.model_copy(update={"deleted_at": b.updated_at})
    )
    with access.acting_as(beta, WRITE):
        assert c.brains.resolve(None) == own  # still its own: the same answer as before the deletion


@pytest.mark.parametrize(
    "name",
    [
        "Real\n- admin (brn_fake): Admin",
        "\x1b[31mred",
        "abc\u202edcba",
        "\u200b\u200d\ufeff",
        "tab\there",
        "\u0301",  # a combining mark with nothing to combine with
        "\u3164\u3164",  # Hangul fillers
        "\u2800",  # the blank Braille pattern
    ],
)
def test_a_name_that_could_forge_a_listing_is_refused(container: Container, name: str) -> None:
    with pytest.raises(InvalidInput, match="name must"):
        container.brains.create(name)
    assert container.brains.list() == []


def test_the_audit_shows_a_key_limited_to_some_brains_only_their_entries(container: Container) -> None:
    a, b = container.brains.create("A"), container.brains.create("B")
    owner = Principal(LOCAL_TENANT, LOCAL_OWNER, frozenset({READ, ADMIN}), Via.api_key)
    container.audit.record(owner, "rest.put_document", brain_id=a.id, target="a.md")
    container.audit.record(owner, "rest.put_document", brain_id=b.id, target="secret/b-plan.md")
    container.audit.record(owner, "rest.create_key")  # names no brain
    limited = Principal(LOCAL_TENANT, LOCAL_OWNER, frozenset({READ, ADMIN}), Via.api_key, frozenset({a.id}))

    def targets() -> set[str | None]:
        entries, _ = container.audit.query(tenant=LOCAL_TENANT, visible=container.brains.audit_visibility())
        return {e.target for e in entries}

    with access.acting_as(limited, ADMIN):
        assert targets() == {"a.md"}
    assert targets() == {"a.md", "secret/b-plan.md", None}  # the operator sees all


def test_an_empty_update_names_only_what_its_caller_may_give(container: Container) -> None:
    container.brains.create("Team", slug="team")
    owner = Principal(LOCAL_TENANT, LOCAL_OWNER, frozenset(SCOPES), Via.static_token)
    with access.acting_as(owner, ADMIN), pytest.raises(InvalidInput) as over_the_wire:
        container.brains.update("team")
    with pytest.raises(InvalidInput) as operator:  # the CLI: a tenant too
        container.brains.update("team")
    assert over_the_wire.value.message == "nothing to change: give visibility or owner"
    assert operator.value.message == "nothing to change: give visibility, owner or tenant"


@pytest.mark.parametrize("owner", ["key:", "arn:", "key", "arn"])
def test_an_owner_must_name_a_principal_not_only_a_namespace(container: Container, owner: str) -> None:
    brain = container.brains.create("Team", slug="team")
    with pytest.raises(InvalidInput, match="names no principal"):
        container.brains.update("team", owner=owner)
    assert container.brains.get("team").owner == brain.owner
    assert container.brains.update("team", owner="key:k1").owner == "key:k1"
