"""What the sweep still has to do for brains (services/maintenance.py), read on every record store
(the fake, SQLite, DynamoDB under moto): memory counts `over`, counts being built, creation-time
entries being built, deletions settling; a brain with nothing to count or all built says nothing,
and the sweep's tick keeps the report /healthz reads."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container, index_sweeper
from cairn.domain.errors import DamagedStore
from cairn.domain.models import Brain, MemoryType
from cairn.ports.records import Item
from cairn.services.erasure.settling import SETTLE_S
from cairn.services.maintenance import BrainMaintenance
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.repositories import documents_pk
from tests.fakes.clock import FakeClock


def with_memories(c: Container, slug: str) -> Brain:
    brain = c.brains.create(slug.title(), slug=slug)
    for n in range(3):
        c.memories.store(brain, MemoryInput(MemoryType.fact, f"Pump {n} runs at 3 bar.", key=f"pump.{n}"))
    return brain


def test_the_report_names_each_brain_the_sweep_still_works_for(c: Container, clock: FakeClock) -> None:
    counts = c.documents.repo.counts
    built = with_memories(c, "built")
    c.memories.count(built, max_age_s=0)
    while not counts.step_times(documents_pk(built.id)):
        pass
    c.brains.create("Empty", slug="empty")  # nothing to count: no counts record, nothing to build
    old = with_memories(c, "old")
    c.adapters.records.delete(documents_pk(old.id), "memory-counts")  # as a brain written before them
    times = with_memories(c, "times")
    pk = documents_pk(times.id)
    c.adapters.records.delete(pk, "memory-counts")
    while not counts.step(pk):  # the counts built, not yet the entries
        pass
    over = with_memories(c, "over")
    held = c.adapters.records.get(documents_pk(over.id), "memory-counts")
    assert held is not None
    c.adapters.records.put(Item(held.pk, held.sk, {"over": True, "at": 0.0}), held.version)
    gone = with_memories(c, "gone")
    c.erasure.delete_brain(gone.id)
    maintenance = c.health.maintenance
    assert isinstance(maintenance, BrainMaintenance) and maintenance.last() is None

    found = maintenance.report()
    assert found.counts_over == (over.id,)
    assert found.counts_building == (old.id,)
    assert found.times_building == (times.id,)
    assert [s.brain_id for s in found.settling] == [gone.id]
    assert maintenance.last() == found
    assert found.summary(named=False) == {
        "counts_over": 1,
        "counts_building": 1,
        "entries_building": 1,
        "deletions_settling": 1,
    }
    assert found.summary(named=True)["brains"] == {
        "counts_over": [over.id],
        "counts_building": [old.id],
        "entries_building": [times.id],
        "deletions_settling": [gone.id],
    }
    one = maintenance.report([old.id], deletions=False)  # `cairn check NAME`: that brain only
    assert one.counts_building == (old.id,) and not one.settling and maintenance.last() == found

    clock.advance(SETTLE_S + 1)
    index_sweeper(c).tick()  # builds what it can, settles the deletion, retries the over mark: reports
    after = maintenance.last()
    assert after is not None and after != found
    assert not after.counts_building and not after.times_building and not after.settling
    assert not after.counts_over  # its three memories fit: counted again, and their entries built
    assert after.quiet


@pytest.mark.parametrize("since", [None, "yesterday", "2026-01-01T00:00:00", 17])
def test_a_damaged_deletion_record_is_damage_not_a_crash(c: Container, since: object) -> None:
    """A settling record whose `since` is not what a deletion wrote (changed outside Cairn) makes
    the report and the deletions' looks fail as damage (DamagedStore: `cairn check` says it and
    exits 2, the sweep logs it and runs its later chores), never a KeyError or TypeError."""
    brain = with_memories(c, "old")
    c.adapters.records.delete(documents_pk(brain.id), "memory-counts")  # to build
    c.adapters.records.put(Item("settling", "brn_gone", {} if since is None else {"since": since}))
    maintenance = c.health.maintenance
    assert maintenance is not None
    with pytest.raises(DamagedStore, match="settling brn_gone"):
        maintenance.report()
    assert maintenance.report([brain.id], deletions=False).counts_building == (brain.id,)
    index_sweeper(c).tick()  # the deletions' looks fail as damage: the build still runs
    assert c.documents.repo.counts.read(documents_pk(brain.id)) is not None


def test_a_tick_lists_the_brains_once(c: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entries' build, the concept-reach pass and the report share one listing of every brain a
    tick (a page read of the brains' partition each 100), and the next tick lists them again."""
    first = with_memories(c, "first")
    c.adapters.records.delete(documents_pk(first.id), "memory-counts")  # its counts to build
    with_memories(c, "second")
    repo = c.brains.repo
    listed = []
    page = repo.page

    def counted(*, after: str | None, limit: int) -> tuple[list[Brain], str | None]:
        listed.append(after)
        return page(after=after, limit=limit)

    monkeypatch.setattr(repo, "page", counted)
    sweep = index_sweeper(c)
    sweep.tick()
    assert listed == [None]
    third = c.brains.create("Third", slug="third")  # the next tick's listing is its own
    sweep.tick()
    assert listed == [None, None]
    maintenance = c.health.maintenance
    assert maintenance is not None and (last := maintenance.last()) is not None
    assert third.id in last.tenants
