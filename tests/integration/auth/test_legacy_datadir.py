"""A data directory written by the release before every brain had an owner (tests/fixtures/legacy,
made at commit a10fde5), opened by this one: its brains get the machine owner, ThoughtMCP keeps
finding its memories where they are, and a key no longer reads what it was never given."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.authenticate import OPEN
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.migrations import MARKER
from cairn.services.thoughtmcp.brain import BRAIN_MARK, thought_brain
from cairn.services.thoughtmcp.models import Filters

FIXTURE = Path(__file__).parents[2] / "fixtures" / "legacy" / "datadir-a10fde5.tar.gz"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path / "data"


def test_ownerless_brains_become_the_machine_owners_and_keys_no_longer_read_them(data: Path) -> None:
    c = build_container(Settings(data_dir=data))
    brains = {b.slug: b for b in c.brains.list()}

    assert {b.owner for b in brains.values()} == {"local"}
    assert {b.visibility.value for b in brains.values()} == {"private"}
    key = Principal("local", "key:k1", frozenset({READ, WRITE}), Via.api_key)  # a tenant key, no brain list
    with access.acting_as(key, READ):
        assert c.brains.list() == []
        hits = c.search.search(brains["team-notes"], "boiler", top_k=5)  # reached past the brain check
    assert hits.hits == []
    with access.acting_as(OPEN, READ):  # the owner still reads everything, search included
        found = c.search.search(c.brains.get("team-notes"), "boiler serviced", top_k=5)
    assert [h.path for h in found.hits][:1] == ["memory/global/boiler.md"]
    assert c.adapters.records.get(*MARKER) is not None


def test_thoughtmcp_keeps_its_memories_in_the_brain_they_landed_in(data: Path) -> None:
    c = build_container(Settings(data_dir=data))
    with access.acting_as(OPEN, READ):
        brain = thought_brain(c.brains, None, user_id="alice")
        assert brain is not None and brain.slug == "team-notes" and brain.metadata[BRAIN_MARK] is True
        found, total = c.thoughts.recall(
            brain, "alice", text="bicycle lock", filters=Filters(), limit=5, min_similarity=0.0
        )
    assert total == 1 and "blue notebook" in found[0].content
    bob = Principal("local", "bob", frozenset({READ, WRITE}), Via.jwt)
    with access.acting_as(bob, READ):  # bob reaches the brain only once it is shared with the tenant
        assert c.brains.list() == []


def test_opening_twice_migrates_once(data: Path) -> None:
    first = build_container(Settings(data_dir=data))
    before = first.adapters.records.get(*MARKER)
    second = build_container(Settings(data_dir=data))
    after = second.adapters.records.get(*MARKER)
    assert before is not None and after is not None and after.version == before.version


def test_an_aws_table_of_the_previous_release_gets_its_brains_owned_on_open(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from dataclasses import replace

    from cairn.domain.models import Brain
    from cairn.services.repositories import BrainRepository
    from tests.contract.aws_storage import dynamodb_records
    from tests.fakes.clock import FakeClock
    from tests.fakes.container import fake_adapters

    with dynamodb_records(request) as records:
        now = FakeClock().now()
        legacy = Brain(  # as the CLI made them before: private, no owner
            id="brn_01legacyaws0000000000000000", slug="ops", name="Ops", embedding_model="m",
            embedding_dim=64, created_at=now, updated_at=now,
        )  # fmt: skip
        BrainRepository(records).create(legacy)

        c = build_container(
            Settings(data_dir=tmp_path / "data", backend="aws"), replace(fake_adapters(), records=records)
        )

        assert c.brains.repo.get(legacy.id).owner == "local"  # type: ignore[union-attr]
        assert records.get(*MARKER) is not None
