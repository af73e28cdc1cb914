"""The memory counts (MemoryReads.count, behind the briefing's brain_stats) and zengram's stats on
every record store: the in-memory fake, SQLite and DynamoDB under moto. Each is computed from the
records' raw data; the answers are those of every memory record decoded (the oracles below), on
generated brains of key chains, status chains, deletions, expired events and several types. Only
the facts whose confidence stats judges are decoded, and a record with a field of another kind is
still refused as damaged."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from unittest.mock import patch

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import DamagedStore
from cairn.domain.models import Brain, Document, MemoryType
from cairn.ports.records import Item, RecordStore
from cairn.services.memory.memory_model import COUNTED_TYPES, MemoryInput
from cairn.services.memory.memory_ranking import effective_confidence
from cairn.services.repositories import doc_key, documents_pk
from cairn.services.zengram.base import BRIEFED_TYPES
from cairn.services.zengram.briefing import ZengramBriefing
from cairn.services.zengram.consolidation import consolidated_until
from tests.fakes.clock import FakeClock

DAY = 86_400


def generated(c: Container, clock: FakeClock, seed: int, writes: int = 45) -> Brain:
    """A brain of `writes` random stores: facts on a few keys (chains) and unkeyed, statuses on a
    few subjects, events, decisions and notes, some deleted, old unread events expired, the clock
    moving on by hours to weeks, and a consolidation run part way."""
    rng = random.Random(seed)
    brain = c.brains.create("Default", slug="default")
    ids: list[str] = []
    for n in range(writes):
        kind = rng.choice(
            [MemoryType.fact, MemoryType.fact, MemoryType.status, MemoryType.event, MemoryType.decision]
        )
        more: dict[str, Any] = {"importance": rng.choice([0.1, 0.5, 0.9])}
        if kind is MemoryType.fact and rng.random() < 0.8:
            more["key"] = f"pump.{rng.randrange(4)}"
        if kind is MemoryType.status:
            more["subject"] = f"line {rng.randrange(3)}"
            more["status_value"] = str(n)
        text = f"Memory {n} of seed {seed}: pump {rng.randrange(100)} runs at {rng.randrange(9)} bar."
        ids.append(c.memories.store(brain, MemoryInput(kind, text, **more)).memory.id)
        if n % 7 == 3:
            c.memories.store(brain, MemoryInput(MemoryType.note, f"A note {n}, not counted by zengram."))
        if rng.random() < 0.15:
            c.memories.delete(brain, rng.choice(ids))
        if n == writes // 2:
            assert c.zengram.consolidate({"action": "run", "sync": "true"}).status == 200
        if rng.random() < 0.1:
            c.memories.expire_events(brain)
        clock.advance(rng.choice([3_600, DAY, 9 * DAY, 40 * DAY]))
    return brain


def counted(c: Container, brain: Brain) -> tuple[int, int]:
    """Every memory decoded, counted as the briefing counted them before."""
    docs = list(c.memories.of_type(brain, list(COUNTED_TYPES)))
    return len(docs), sum(d.chunk_count for d in docs if d.deleted_at is None)


def stats(c: Container, brain: Brain, clock: FakeClock) -> dict[str, Any]:
    """zengram's stats as computed before, from every memory decoded."""
    docs = [d for d in c.memories.of_type(brain, list(BRIEFED_TYPES)) if d.deleted_at is None and d.memory]
    active = [d for d in docs if d.memory and d.memory.current]
    by_type = Counter(d.memory.type.value for d in docs if d.memory)
    newest = sorted(
        (d for d in active if d.memory and d.memory.type is MemoryType.fact),
        key=lambda d: d.created_at,
        reverse=True,
    )[:100]
    reads = c.memories.access_of(brain, [d.id for d in newest])
    now = clock.now()
    settled = consolidated_until(c.zengram.c, brain)
    return {
        "total_memories": len(docs),
        "vectors_count": sum(d.chunk_count for d in docs),
        "active": len(active),
        "superseded": len(docs) - len(active),
        "consolidated": sum(1 for d in docs if settled is not None and d.created_at <= settled),
        "by_type": {t.value: by_type[t.value] for t in BRIEFED_TYPES},
        "decayed_below_50pct": sum(
            1 for d in newest if effective_confidence(d.memory, d.created_at, reads[d.id].last, now) < 0.5
        ),
    }


def answered(c: Container) -> dict[str, Any]:
    body = c.zengram.stats().body
    return {
        k: body[k]
        for k in (
            "total_memories",
            "vectors_count",
            "active",
            "superseded",
            "consolidated",
            "by_type",
            "decayed_below_50pct",
        )
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_counts_and_stats_are_those_of_every_memory_decoded(
    c: Container, clock: FakeClock, seed: int
) -> None:
    brain = generated(c, clock, seed)
    expected = stats(c, brain, clock)
    # the generated brain has what each answer counts
    assert 0 < expected["active"] < expected["total_memories"] and expected["consolidated"] > 0
    assert expected["decayed_below_50pct"] > 0 and all(expected["by_type"].values())
    assert counted(c, brain)[0] > expected["total_memories"]  # deleted ones too
    assert c.memories.count(brain, max_age_s=0) == counted(c, brain)
    assert answered(c) == expected


def test_counting_decodes_no_memory_and_stats_only_the_newest_facts(
    c: Container, clock: FakeClock, decoded: list[str]
) -> None:
    brain = generated(c, clock, seed=4)
    newest = [
        d.id
        for d in c.memories.of_type(brain, [MemoryType.fact])
        if d.deleted_at is None and d.memory is not None and d.memory.current
    ]
    decoded.clear()
    assert c.memories.count(brain, max_age_s=0)[0] > len(newest)
    assert decoded == []
    c.zengram.stats()
    assert sorted(decoded) == sorted(newest)  # under 100 current facts: each, and nothing else


def _damage(records: RecordStore, doc: Document, change: Callable[[dict[str, Any]], None]) -> None:
    item = records.get(*doc_key(doc.brain_id, doc.path))
    assert item is not None
    data = dict(item.data)
    data["memory"] = dict(data["memory"])
    change(data)
    records.put(Item(item.pk, item.sk, data))


@pytest.mark.parametrize(
    ("change", "counting_reads_it"),
    [
        (lambda d: d.update(chunk_count="many"), True),
        (lambda d: d.update(memory="a fact"), True),
        (lambda d: d["memory"].update(type="rumour"), True),
        (lambda d: d["memory"].update(type=["fact"]), True),
        (lambda d: d["memory"].update(superseded_by=["x"]), True),
        (lambda d: d["memory"].update(user_id=3), True),
        (lambda d: d.update(deleted_at="yesterday"), True),  # text that is no time: not counted as deleted
        (lambda d: d["memory"].update(expired_at="soon"), True),
        # text datetime.fromisoformat reads as a time and decoding does not
        (lambda d: d.update(deleted_at="2026-W01-1"), True),
        (lambda d: d.update(deleted_at="20260101T000000"), True),
        (lambda d: d["memory"].update(expired_at="2026-01-01T00"), True),
        (lambda d: d.update(created_at="last week"), False),  # read by stats, not by the count
    ],
)
def test_a_record_with_a_field_of_another_kind_is_refused_as_damaged(
    c: Container,
    records: RecordStore,
    clock: FakeClock,
    change: Callable[[dict[str, Any]], None],
    counting_reads_it: bool,
) -> None:
    brain = c.brains.create("Default", slug="default")
    kept = c.memories.store(brain, MemoryInput(MemoryType.fact, "Pump 1 runs at 3 bar.", key="pump.1")).memory
    clock.advance(60)
    c.memories.store(brain, MemoryInput(MemoryType.fact, "Pump 2 runs at 4 bar.", key="pump.2"))
    assert c.zengram.consolidate({"action": "run", "sync": "true"}).status == 200
    _damage(records, kept, change)
    with pytest.raises(DamagedStore, match=re.escape(kept.path)):
        c.zengram.stats()
    if counting_reads_it:
        with pytest.raises(DamagedStore, match=re.escape(kept.path)):
            c.memories.count(brain, max_age_s=0)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(chunk_count=str(d["chunk_count"] + 2)),
        lambda d: d.update(deleted_at=7),  # seconds since 1970
        lambda d: d["memory"].update(expired_at=5),
        lambda d: d.update(created_at=d["created_at"][:19]),  # no offset: read as UTC
        lambda d: d["memory"].update(valid_from="2024-05-01T08:00:00"),
    ],
)
def test_a_field_its_decoding_reads_as_another_kind_counts_as_decoded(
    c: Container, records: RecordStore, clock: FakeClock, change: Callable[[dict[str, Any]], None]
) -> None:
    brain = c.brains.create("Default", slug="default")
    kept = c.memories.store(brain, MemoryInput(MemoryType.fact, "Pump 1 runs at 3 bar.", key="pump.1")).memory
    c.memories.store(brain, MemoryInput(MemoryType.fact, "Pump 2 runs at 4 bar.", key="pump.2"))
    _damage(records, kept, change)
    assert c.memories.count(brain, max_age_s=0) == counted(c, brain)
    assert answered(c) == stats(c, brain, clock)


def _kept_only() -> Any:
    """stats answering from the kept counts and entries alone: reading every record fails."""
    return patch.object(ZengramBriefing, "_counted", side_effect=AssertionError("read every record"))


def mixed_times(c: Container, clock: FakeClock, brain: Brain, seed: int) -> None:
    """Memories whose creation times are not in the order of their writes: restores (kept ids)
    with the clock set years back and a year ahead, upserts of restored ids, facts made at one
    same instant across folders (ties at the newest facts' bound), deletions, a supersession of a
    restored value, and a consolidation run between."""
    rng = random.Random(seed)
    now = clock.current
    kinds = []
    for n in range(12):
        clock.current = now + timedelta(days=rng.choice([-3_000, -400, -1, 0, 365, 2_000]))
        kinds.append(rng.choice([MemoryType.fact, MemoryType.event, MemoryType.decision]))
        more: dict[str, Any] = {"key": f"pump.{rng.randrange(4)}"} if kinds[-1] is MemoryType.fact else {}
        c.memories.store(
            brain, MemoryInput(kinds[-1], f"Restored {n} of {seed}", memory_id=f"r{seed}-{n}", **more)
        )
    clock.current = now + timedelta(days=30)
    clock.tick = timedelta(0)  # one instant for all of these
    ids = [
        c.memories.store(brain, MemoryInput(kind, f"Same instant {n} of {seed}")).memory.id
        for n, kind in enumerate([MemoryType.fact] * 60 + [MemoryType.event] * 5)
    ]
    clock.tick = timedelta(milliseconds=1)
    clock.advance(3_600)
    for memory_id in rng.sample(ids, 6):
        c.memories.delete(brain, memory_id)
    assert c.zengram.consolidate({"action": "run", "sync": "true"}).status == 200
    clock.current = now - timedelta(days=50)  # after the run, created before its cut
    for n in range(50):
        c.memories.store(brain, MemoryInput(MemoryType.fact, f"Late {n} of {seed}"))
    c.memories.store(brain, MemoryInput(kinds[1], f"Upserted again {seed}", memory_id=f"r{seed}-1"))
    clock.current = now + timedelta(days=60)


@pytest.mark.parametrize("seed", [1, 2])
def test_stats_from_the_kept_entries_are_those_of_every_memory_decoded(
    c: Container, clock: FakeClock, seed: int
) -> None:
    brain = generated(c, clock, seed, writes=30)
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    counts.times_step = 7
    mixed_times(c, clock, brain, seed)
    expected = stats(c, brain, clock)
    assert expected["consolidated"] > 0 and expected["decayed_below_50pct"] > 0
    assert answered(c) == expected  # the counts built, the entries one step in: every record read
    assert not counts.times_built(pk)
    c.memories.store(brain, MemoryInput(MemoryType.fact, "Written while the entries are built"))
    c.memories.delete(brain, f"r{seed}-2")
    while not counts.step_times(pk):
        pass
    expected = stats(c, brain, clock)
    with _kept_only():
        assert answered(c) == expected
    mixed_times(c, clock, brain, seed + 10)  # the entries kept by the writers from now on
    expected = stats(c, brain, clock)
    with _kept_only():
        assert answered(c) == expected


def test_stats_reads_the_newest_entries_not_every_record(
    c: Container, records: RecordStore, clock: FakeClock
) -> None:
    brain = c.brains.create("Default", slug="default")
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    read: list[int] = []
    wrapped = records.query

    def query(*args: Any, **kwargs: Any) -> Any:
        page = wrapped(*args, **kwargs)
        read.append(len(page.items))
        return page

    def stats_reads() -> int:
        c.memories.count(brain, max_age_s=0)
        while not counts.step_times(pk):  # as the sweep builds them
            pass
        expected = stats(c, brain, clock)
        read.clear()
        with patch.object(records, "query", side_effect=query):
            assert answered(c) == expected
        return sum(read)

    reads, written = [], 0
    for size in (130, 260):
        for n in range(written, size):
            c.memories.store(brain, MemoryInput(MemoryType.fact, f"Fact {n}: pump {n} at 3 bar."))
            if n == size - 20:  # the last ones unconsolidated
                assert c.zengram.consolidate({"action": "run", "sync": "true"}).status == 200
        written = size
        reads.append(stats_reads())
    assert reads[0] == reads[1] <= 130  # as many at twice the memories: the newest 100 facts' entries


def test_stats_reads_the_counts_record_once(c: Container, records: RecordStore, clock: FakeClock) -> None:
    """The counts' record tells both whether the counts are built and whether the creation-time
    entries are: a stats call reads it once (on DynamoDB a second read was one GetItem more)."""
    brain = c.brains.create("Default", slug="default")
    for n in range(5):
        c.memories.store(brain, MemoryInput(MemoryType.fact, f"Fact {n}: pump {n} at 3 bar."))
    counts, pk = c.documents.repo.counts, documents_pk(brain.id)
    while not counts.step(pk) or not counts.step_times(pk):  # as the sweep builds them
        pass
    expected = stats(c, brain, clock)
    keys: list[tuple[str, str]] = []
    get, get_many = records.get, records.get_many

    def spy_get(pk: str, sk: str) -> Any:
        keys.append((pk, sk))
        return get(pk, sk)

    def spy_get_many(wanted: Any) -> Any:
        wanted = list(wanted)
        keys.extend(wanted)
        return get_many(wanted)

    with patch.object(records, "get", side_effect=spy_get), patch.object(records, "get_many", spy_get_many):
        assert answered(c) == expected
    assert keys.count((pk, "memory-counts")) == 1, keys
