"""The build of the current memories' entries of a brain written before them
(services/documents/current_memories.py), on every record store: no listing builds them whole, a
listing's answer while they are built is the listing of every record kept to the current ones
(the oracle), writes between the steps included, and the sweep finishes them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cairn.bootstrap import Container, build_container, index_sweeper
from cairn.config import Settings
from cairn.domain.models import Brain, MemoryType
from cairn.ports.records import RecordStore
from cairn.services.memory.memory_model import Containing, MemoryInput
from cairn.services.repositories import all_items, documents_pk
from tests.contract.test_current_memories_contract import KEY, brain, oracle

__all__ = ["brain"]

KINDS = [MemoryType.fact, MemoryType.status, MemoryType.event]


def written_before(c: Container, brain: Brain, records: RecordStore, tmp_path: Path) -> Container:
    """The brain as an earlier release left it (no entry, no mark), opened by a new process."""
    pk = documents_pk(brain.id)
    for item in [*all_items(records, pk, "cur#"), *all_items(records, pk, "current-memories")]:
        records.delete(item.pk, item.sk)
    return build_container(Settings(data_dir=tmp_path / "later"), replace(c.adapters, records=records))


def answers(c: Container, brain: Brain) -> dict[str, list[str]]:
    return {
        "every type": [d.id for d in c.memories.current_of_type(brain, KINDS)],
        "a key": [
            d.id
            for d in c.memories.current_of_type(brain, [MemoryType.fact], containing=Containing("key", KEY))
        ],
        "a subject": [
            d.id
            for d in c.memories.current_of_type(
                brain, [MemoryType.status], containing=Containing("subject", "release")
            )
        ],
    }


def expected(c: Container, brain: Brain) -> dict[str, list[str]]:
    return {
        "every type": oracle(c, brain, KINDS, "key", None),
        "a key": oracle(c, brain, [MemoryType.fact], "key", KEY),
        "a subject": oracle(c, brain, [MemoryType.status], "subject", "release"),
    }


def test_no_listing_builds_the_entries_whole_and_each_answers_as_every_record(
    c: Container, brain: Brain, records: RecordStore, tmp_path: Path
) -> None:
    later = written_before(c, brain, records, tmp_path)
    later.documents.repo.current.step_records = 4
    memories = sum(1 for _ in c.documents.repo.raw(brain.id, "memories/"))
    pk = documents_pk(brain.id)
    listings = 0
    while records.get(pk, "current-memories") is None:
        assert answers(later, brain) == expected(c, brain)
        listings += 1
        assert listings <= memories // 4 + 1
        if listings == 2:  # a write between two steps, by the other process: a key's new value
            c.memories.store(brain, MemoryInput(MemoryType.fact, "The kettle descales daily.", key=KEY))
        if listings == 3:  # and one that ends a current memory the build has passed
            first = next(iter(c.memories.current_of_type(brain, KINDS)))
            c.memories.delete(brain, first.id)
    assert listings > 1  # the first listing took one step, not the whole build
    assert answers(later, brain) == answers(c, brain) == expected(c, brain)
    assert records.get(pk, "current-memories-step") is None


def test_the_sweep_builds_the_entries_of_a_brain_written_before_them(
    c: Container, brain: Brain, records: RecordStore, tmp_path: Path
) -> None:
    later = written_before(c, brain, records, tmp_path)
    later.documents.repo.current.step_records = 4
    index_sweeper(later).tick()
    assert records.get(documents_pk(brain.id), "current-memories") is not None
    assert answers(later, brain) == expected(c, brain)


def test_a_stop_asked_during_the_sweep_ends_the_build_at_its_next_step_and_the_next_sweep_finishes_it(
    c: Container, brain: Brain, records: RecordStore, tmp_path: Path
) -> None:
    """The sweep's chore steps the build for up to 20 s; a stop asked meanwhile (the process is
    stopping: its manager allows 30 s in all) ends it after the step under way, the build left
    resumable from that step."""
    later = written_before(c, brain, records, tmp_path)
    current = later.documents.repo.current
    current.step_records = 2
    sweeper = index_sweeper(later)
    step = current.step
    steps: list[str] = []

    def counted(pk: str) -> bool:
        steps.append(pk)
        if len(steps) == 2:
            sweeper._loop._stop.set()  # what `stop` sets first
        return step(pk)

    current.step = counted  # type: ignore[method-assign]
    sweeper.tick()
    assert len(steps) == 2  # no step after the stop
    assert records.get(documents_pk(brain.id), "current-memories") is None
    sweeper._loop._stop.clear()
    sweeper.tick()
    assert len(steps) > 3 and records.get(documents_pk(brain.id), "current-memories") is not None
    assert answers(later, brain) == expected(c, brain)
