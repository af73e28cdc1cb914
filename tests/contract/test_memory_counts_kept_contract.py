"""The memory counts each commit keeps (services/documents/memory_counts.py) on every record store:
after random stores, supersessions, updates, deletes, erasures, expiries and consolidations through
the services, with their build stepping in between, from threads at once, and with a commit or a
step failing part way, the kept counts and creation-time entries are what a recount of every
record gives, and MemoryReads.count answers what every memory decoded gives."""

from __future__ import annotations

import random
import threading
from dataclasses import replace
from typing import Any
from unittest.mock import patch

import pytest

from cairn import faults
from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.bootstrap import Container, index_sweeper
from cairn.domain.models import Brain, MemoryType
from cairn.services.documents import memory_counts, memory_times
from cairn.services.memory.memory_model import COUNTED_TYPES, MemoryInput
from cairn.services.repositories import documents_pk
from cairn.services.zengram.briefing import ZengramBriefing
from tests.contract.test_memory_counts_contract import answered, stats
from tests.fakes.clock import FakeClock

DAY = 86_400
SMALL_BOUND = 12_000
"""The counts' bound (memory_counts.MAX_BYTES, 256,000) in the tests that need counts `over` and
not its value: 21 folders of 975 characters pass it, where the real one takes 420 (each a commit,
some 0.1 s on DynamoDB under moto)."""


def folders_past_the_bound(monkeypatch: pytest.MonkeyPatch, *, real: bool = False) -> int:
    """How many folders of 975 characters make the counts `over`: 420 at the real bound (past a
    DynamoDB item's 400 KB too, were there no bound), 21 once the bound is set to SMALL_BOUND."""
    if real:
        return 420
    monkeypatch.setattr(memory_counts, "MAX_BYTES", SMALL_BOUND)
    return 21


def decoded_count(c: Container, brain: Brain) -> tuple[int, int]:
    docs = list(c.memories.of_type(brain, list(COUNTED_TYPES)))
    return len(docs), sum(d.chunk_count for d in docs if d.deleted_at is None)


def assert_kept(c: Container, brain: Brain) -> None:
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    while not counts.step(pk):
        pass
    kept = counts.read(pk)
    assert kept is not None
    assert {owner: buckets for owner, buckets in kept.items() if buckets} == counts.recount(pk)
    while not counts.step_times(pk):
        pass
    entries = c.documents.repo.records.query(pk, memory_times.PREFIX).items
    assert [(e.sk, e.data) for e in entries] == [(e.sk, e.data) for e in counts.recount_times(pk)]
    assert c.memories.count(brain, max_age_s=0) == decoded_count(c, brain)


def random_writes(c: Container, clock: FakeClock, brain: Brain, rng: random.Random, writes: int) -> None:
    """Stores on a few keys and subjects (supersessions), updates, soft deletes, erasures, notes
    written as plain documents under memories/, event expiry and a consolidation run; one step of
    the counts' build (when unbuilt) after each."""
    ids: list[tuple[str, MemoryType]] = []
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    for n in range(writes):
        roll = rng.random()
        if roll < 0.5 or not ids:
            kind = rng.choice([MemoryType.fact, MemoryType.status, MemoryType.event, MemoryType.decision])
            more: dict[str, Any] = {}
            if kind is MemoryType.fact and rng.random() < 0.7:
                more["key"] = f"pump.{rng.randrange(3)}"
            if kind is MemoryType.status:
                more["subject"] = f"line {rng.randrange(2)}"
                more["status_value"] = str(n)
            text = (
                f"Memory {n}: pump {rng.randrange(50)} at {rng.randrange(9)} bar, {'x ' * rng.randrange(400)}"
            )
            ids.append((c.memories.store(brain, MemoryInput(kind, text, **more)).memory.id, kind))
        elif roll < 0.6:
            memory_id, _ = rng.choice(ids)
            doc = c.documents.repo.get_by_id(memory_id)
            if doc is not None and doc.deleted_at is None:
                c.memories.update(brain, memory_id, content=f"Changed {n}: {'y ' * rng.randrange(600)}")
        elif roll < 0.75:
            memory_id, _ = rng.choice(ids)
            doc = c.documents.repo.get_by_id(memory_id)
            if doc is not None and doc.deleted_at is None:
                c.memories.delete(brain, memory_id)
        elif roll < 0.82:
            memory_id, _ = rng.choice(ids)
            doc = c.documents.repo.get_by_id(memory_id)
            if doc is not None:
                c.documents.erase(brain, doc.path)
        elif roll < 0.88:
            c.documents.write(brain, f"memories/fact/plain-{n}.md", f"A plain note {n}".encode())
        elif roll < 0.94:
            c.memories.expire_events(brain)
        else:
            assert c.zengram.consolidate({"action": "run", "sync": "true"}).status == 200
        counts.step(pk)
        counts.step_times(pk)
        clock.advance(rng.choice([3_600, DAY, 40 * DAY]))


@pytest.mark.parametrize("seed", [1, 2])
def test_kept_counts_are_a_recount_after_random_writes(c: Container, clock: FakeClock, seed: int) -> None:
    brain = c.brains.create("Default", slug="default")
    assert c.memories.count(brain, max_age_s=0) == (0, 0)  # an empty brain's counts are built at once
    random_writes(c, clock, brain, random.Random(seed), 40)
    assert_kept(c, brain)
    assert c.memories.count(brain, max_age_s=0)[0] > 0


def test_a_brain_written_before_the_counts_has_them_built_beside_writers(
    c: Container, clock: FakeClock
) -> None:
    brain = c.brains.create("Default", slug="default")
    rng = random.Random(7)
    random_writes(c, clock, brain, rng, 20)
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    c.documents.repo.records.delete(pk, "memory-counts")  # as a release before the counts left it
    counts.step_records = counts.times_step = (
        3  # each step passes a few records, writes land before and after it
    )
    assert counts.read(pk) is None
    random_writes(c, clock, brain, rng, 25)
    assert_kept(c, brain)


def test_concurrent_writers_leave_the_counts_right(c: Container, clock: FakeClock) -> None:
    brain = c.brains.create("Default", slug="default")
    random_writes(c, clock, brain, random.Random(3), 6)
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    c.documents.repo.records.delete(pk, "memory-counts")
    counts.step_records = counts.times_step = 2
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for n in range(6):
                stored = c.memories.store(
                    brain, MemoryInput(MemoryType.fact, f"Writer {w} fact {n}", key=f"k{w % 2}")
                ).memory
                if n % 3 == 2:
                    c.memories.delete(brain, stored.id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    def builder() -> None:
        try:
            for _ in range(80):
                if counts.step(pk) and counts.step_times(pk):
                    return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    threads.append(threading.Thread(target=builder))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert_kept(c, brain)


def test_a_commit_or_a_step_failing_part_way_leaves_the_counts_right(c: Container, clock: FakeClock) -> None:
    brain = c.brains.create("Default", slug="default")
    random_writes(c, clock, brain, random.Random(5), 8)
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    with faults.armed("counts.read"), pytest.raises(faults.InjectedFault):
        c.memories.store(brain, MemoryInput(MemoryType.event, "Stored with its counts read, not committed"))
    with faults.armed("documents.committed"), pytest.raises(faults.InjectedFault):
        c.memories.store(brain, MemoryInput(MemoryType.event, "Committed, not indexed"))
    assert_kept(c, brain)
    c.documents.repo.records.delete(pk, "memory-counts")
    counts.step_records = counts.times_step = 3
    with faults.armed("counts.step"), pytest.raises(faults.InjectedFault):
        counts.step(pk)
    with faults.armed("counts.times_step"), pytest.raises(faults.InjectedFault):
        counts.step_times(pk)
    c.memories.store(brain, MemoryInput(MemoryType.decision, "Stored while the build is under way"))
    assert_kept(c, brain)


def test_a_superseded_fact_changed_after_its_writer_read_it_fails_the_commit_which_retries(
    c: Container,
) -> None:
    """The counts take the superseded fact as its writer read it (memory_counts.Replacing): deleted
    between that read and the counts', it fails the commit's condition, and the store tries again
    on what it finds then (the value before the deleted one, which the line goes on from)."""
    brain = c.brains.create("Default", slug="default")
    first = c.memories.store(brain, MemoryInput(MemoryType.fact, "The pump is in hall 1", key="pump")).memory
    second = c.memories.store(brain, MemoryInput(MemoryType.fact, "The pump is in hall 2", key="pump")).memory
    counts = c.documents.repo.counts
    counted = counts.ops
    deleted: list[str] = []

    def deleting_first(ops: Any) -> Any:
        if not deleted:  # the store's first commit, before it reads the counts
            deleted.append(second.id)
            c.memories.delete(brain, second.id)
        return counted(ops)

    with patch.object(counts, "ops", deleting_first):
        stored = c.memories.store(brain, MemoryInput(MemoryType.fact, "The pump is in hall 3", key="pump"))
    assert deleted
    assert stored.supersedes == first.id  # not the deleted one its first commit superseded
    gone = c.documents.repo.get_by_id(second.id)
    assert gone is not None and gone.deleted_at is not None and gone.memory is not None
    assert gone.memory.superseded_by is None  # left as its delete left it
    assert_kept(c, brain)


def test_counts_that_outgrow_a_record_leave_memory_writes_and_counts_working(
    c: Container, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers choose the folders (and owners) the counts keep a bucket for: notes in 420 folders
    of 975 characters each would make the counts record larger than a DynamoDB item holds (400
    KB). Every commit still lands, the count and zengram's stats still answer what every record
    gives (no creation-time entry is kept or built past that), and so does a build of those counts
    in a brain written before them. At the real bound on DynamoDB, which refuses such an item (the
    other stores take any size: there the bound is SMALL_BOUND, and 21 folders)."""
    folders = folders_past_the_bound(
        monkeypatch, real=isinstance(c.documents.repo.records, DynamoRecordStore)
    )
    brain = c.brains.create("Default", slug="default")
    pk = documents_pk(brain.id)
    assert c.memories.count(brain, max_age_s=0) == (0, 0)  # built, so every note below is counted
    assert answered(c) == stats(c, brain, clock)  # the creation-time entries built too
    for n in range(folders):
        c.documents.write(brain, f"memories/{n:04d}{'f' * 971}/note.md", f"A note in folder {n}".encode())
    stored = c.memories.store(brain, MemoryInput(MemoryType.fact, "The pump runs at 4 bar", key="pump"))
    c.memories.store(brain, MemoryInput(MemoryType.event, "The pump was serviced"))
    c.memories.delete(brain, stored.memory.id)
    assert c.memories.count(brain, max_age_s=0) == decoded_count(c, brain) == (2, 1)
    for _ in range(8):  # each asks for a step of the entries. build (99 records a step)
        assert answered(c) == stats(c, brain, clock)
    c.memories.store(brain, MemoryInput(MemoryType.fact, "The valve is shut", key="valve"))
    assert answered(c) == stats(c, brain, clock)

    c.documents.repo.records.delete(pk, "memory-counts")  # as a release before the counts left it
    assert c.memories.count(brain, max_age_s=0) == decoded_count(c, brain)
    c.memories.store(brain, MemoryInput(MemoryType.decision, "Replace the pump seal"))
    assert c.memories.count(brain, max_age_s=0) == decoded_count(c, brain) == (4, 3)


def test_counts_over_are_counted_again_by_the_sweep_once_they_fit(
    c: Container, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts marked `over` go back to kept counts once the folders that blew them up are gone:
    the sweep counts them again an hour after the mark (not sooner), and a recount that still
    does not fit is marked `over` anew, to be tried an hour later."""
    folders = folders_past_the_bound(monkeypatch)
    brain = c.brains.create("Default", slug="default")
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    sweep = index_sweeper(c)
    assert c.memories.count(brain, max_age_s=0) == (0, 0)  # built
    paths = [f"memories/{n:04d}{'f' * 971}/note.md" for n in range(folders)]
    for n, path in enumerate(paths):
        c.documents.write(brain, path, f"A note in folder {n}".encode())
    c.memories.store(brain, MemoryInput(MemoryType.fact, "The pump runs at 4 bar", key="pump"))
    assert counts.held(pk) == {"over": True, "at": pytest.approx(clock.now().timestamp(), abs=5)}

    clock.advance(3_000)
    sweep.tick()  # not an hour yet: left alone
    assert counts.held(pk) is not None and counts.held(pk)["over"] is True
    clock.advance(700)
    sweep.tick()  # an hour: counted again, and they still do not fit
    marked = counts.held(pk)
    assert marked == {"over": True, "at": pytest.approx(clock.now().timestamp(), abs=5)}

    for path in paths[:-5]:  # the long folders go, erased (five are left, which fit)
        c.documents.erase(brain, path)
    clock.advance(1_000)
    sweep.tick()
    assert counts.held(pk) == marked  # no sooner than an hour after the last try
    clock.advance(2_700)
    sweep.tick()
    assert counts.read(pk) is not None and counts.times_built(pk)
    assert_kept(c, brain)
    c.memories.store(brain, MemoryInput(MemoryType.fact, "The valve is shut", key="valve"))
    with patch.object(ZengramBriefing, "_counted", side_effect=AssertionError("read every record")):
        assert answered(c) == stats(c, brain, clock)  # from the kept counts and entries again
    assert c.memories.count(brain, max_age_s=0) == decoded_count(c, brain)


@pytest.mark.parametrize("timed", [True, False], ids=["marked-an-hour-ago", "marked-by-an-earlier-release"])
def test_a_retry_of_counts_over_keeps_what_writers_do_meanwhile(
    c: Container, clock: FakeClock, timed: bool
) -> None:
    """A commit while the sweep's retry counts an `over` brain again (its first step between its
    read of the records and its write) is in the counts the retry builds: they end equal to a
    recount of every record once the writers are done."""
    brain = c.brains.create("Default", slug="default")
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    stored = [
        c.memories.store(brain, MemoryInput(MemoryType.fact, f"Pump {n} runs at {n} bar")) for n in range(6)
    ]
    records = c.documents.repo.records
    held = records.get(pk, "memory-counts")
    assert held is not None
    mark: dict[str, Any] = {"over": True, "at": clock.now().timestamp() - 3_700} if timed else {"over": True}
    records.put(replace(held, data=mark), held.version)  # as a commit that outgrew the record left it
    counts.step_records = 4  # the retry's first step passes the first four records

    def meanwhile() -> None:  # a writer between the step's read and its write
        for memory in stored:  # the first four among them, in the step's page
            c.memories.delete(brain, memory.memory.id)
        c.memories.store(brain, MemoryInput(MemoryType.decision, "Replace the pump seal"))

    with faults.armed("counts.step", action=meanwhile):
        counts.carry_on([pk], budget_s=60)
    while not counts.step(pk):
        pass
    kept = counts.read(pk)
    assert kept is not None
    assert {owner: buckets for owner, buckets in kept.items() if buckets} == counts.recount(pk)
    assert c.memories.count(brain, max_age_s=0) == decoded_count(c, brain)


def test_the_sweep_reads_the_counts_of_many_brains_in_one_batch(c: Container) -> None:
    """The sweep's counts builds read which brains still need them in one batch read, not a read
    of each brain's counts each tick (on DynamoDB, thousands of brains' reads outlast the
    builds' budget, and the brains listed after them were never reached); what they need is
    still built. Ten brains show it as thirty did: reading each brain's counts is ten reads."""
    brains = [c.brains.create(f"Brain {n}", slug=f"b{n}") for n in range(10)]
    for brain in brains:
        c.memories.store(brain, MemoryInput(MemoryType.fact, "The pump runs at 4 bar"))
    sweep = index_sweeper(c)
    sweep.tick()  # every brain's counts and entries built
    old = brains[-1]
    c.documents.repo.records.delete(documents_pk(old.id), "memory-counts")  # as written before them
    records = c.documents.repo.records
    read: list[str] = []
    get = records.get

    def counted(pk: str, sk: str) -> Any:
        if sk == "memory-counts":
            read.append(pk)
        return get(pk, sk)

    with patch.object(records, "get", side_effect=counted):
        sweep.tick()
    assert read == [documents_pk(old.id)] * len(read) and len(read) <= 4  # the one to build only
    assert_kept(c, old)
