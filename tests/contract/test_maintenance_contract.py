"""What the sweep still has to do for brains (services/maintenance.py), read on every record store
(the fake, SQLite, DynamoDB under moto): memory counts `over`, counts being built, creation-time
entries being built, deletions settling; a brain with nothing to count or all built says nothing,
and the sweep's tick keeps the report /healthz reads."""

from __future__ import annotations

from unittest.mock import ANY

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
        "concept_reach_to_do": 5,  # no pass yet: every live brain is to scan
        "concept_reach_done": 0,
        "image_refs_to_do": 5,  # and of the image-reference pass
        "image_refs_done": 0,
        "swept_at": ANY,  # the fake clock moves on each read: the tick's time
    }
    assert found.summary(named=True)["brains"] == {
        "counts_over": [over.id],
        "counts_building": [old.id],
        "entries_building": [times.id],
        "deletions_settling": [gone.id],
        "concept_reach_to_do": [b.id for b in c.brains.own()],
        "image_refs_to_do": [b.id for b in c.brains.own()],
    }
    one = maintenance.report([old.id], deletions=False)  # `cairn check NAME`: that brain only
    assert one.counts_building == (old.id,) and not one.settling and maintenance.last() == found
    assert (one.reach_to_do, one.reach_done) == ((), 0)  # no brain record given: the pass not said
    named = maintenance.report([old.id], deletions=False, named=[old])  # as `cairn check` gives them
    assert (named.reach_to_do, named.reach_done) == ((old.id,), 0) and maintenance.last() == found

    clock.advance(SETTLE_S + 1)
    index_sweeper(c).tick()  # builds what it can, settles the deletion, retries the over mark: reports
    after = maintenance.last()
    assert after is not None and after != found
    assert not after.counts_building and not after.times_building and not after.settling
    assert not after.counts_over  # its three memories fit: counted again, and their entries built
    assert not after.reach_to_do and after.reach_done == 5  # the tick's pass scanned them
    assert not after.image_refs_to_do and after.image_refs_done == 5
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


def test_the_report_says_how_far_the_concept_reach_pass_is(c: Container, clock: FakeClock) -> None:
    """Brains to scan and done, from the pass's marks; none to scan once it has finished, and a
    brain deleted is neither."""
    from cairn.services.mnemosyne import concept_reach_sweep as sweep

    brains = [c.brains.create(f"B{n}", slug=f"b{n}") for n in range(3)]
    maintenance = c.health.maintenance
    assert maintenance is not None
    reach = sweep.ReachSweep(c.adapters.records, c.concepts.reach, c.documents.repo, clock)
    reach.step(lambda: brains[:1])  # the first brain's scan (it holds no links: one page)
    reach.step(lambda: brains[:1])
    found = maintenance.report()
    assert (found.reach_to_do, found.reach_done) == ((brains[1].id, brains[2].id), 1)
    assert not found.quiet
    said = found.summary(named=True)
    assert (said["concept_reach_to_do"], said["concept_reach_done"]) == (2, 1)
    assert said["brains"]["concept_reach_to_do"] == [brains[1].id, brains[2].id]  # type: ignore[index]
    c.erasure.delete_brain(brains[2].id)
    clock.advance(sweep.LATE_S + 1)
    while not reach.step(c.brains.own):  # the rest scanned, then the pass finished
        pass
    found = maintenance.report(deletions=False)
    assert (found.reach_to_do, found.reach_done) == ((), 2)


def test_a_shared_report_is_read_by_a_process_that_runs_no_sweep(c: Container, clock: FakeClock) -> None:
    """Where `shared` (AWS), each report of every brain is kept in one record, counts and time; a
    process that made none reads it (at most once a READ_EVERY_S); a damaged one is left out."""
    from cairn.services import maintenance as module
    from cairn.services.erasure.settling import DeletionsSettling

    records = c.adapters.records
    made = c.health.maintenance
    assert made is not None

    def process(*, shared: bool) -> BrainMaintenance:
        settling = DeletionsSettling(records, clock)
        return BrainMaintenance(records, settling, made.brains, made.reach_left, clock=clock, shared=shared)

    sweep, api, local = process(shared=True), process(shared=True), process(shared=False)
    assert api.last() is None
    with_memories(c, "one")
    found = sweep.report()
    assert local.last() is None  # not shared: no record is read
    assert api.last() is None  # the None read is kept for READ_EVERY_S
    api._read = None
    read = api.last()
    assert read is not None and read.swept_at == found.swept_at and not read.quiet
    assert read.summary(named=True) == found.summary(named=False)  # counts alone, never ids
    assert read.summary(named=False)["concept_reach_to_do"] == 1
    held = records.get(*module.REPORT_KEY)
    assert held is not None
    records.put(Item(*module.REPORT_KEY, {**held.data, "counts": {"counts_over": -1}}), held.version)
    api._read = None
    assert api.last() is None  # damaged: left out, no crash
