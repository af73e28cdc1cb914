"""The current memories of a type (MemoryReads.current_of_type, behind zengram's brain_query and
export) on every record store: the in-memory fake, SQLite and DynamoDB under moto. The answer is
the listing of every memory of the type kept to the current ones (the oracle below), and the
records that cannot answer (deleted, superseded, expired, another key) are never decoded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, MemoryType
from cairn.ports.records import RecordStore
from cairn.services.memory.memory_model import MemoryInput
from tests.fakes.clock import FakeClock
from tests.support import world_copies

KEY = "kettle.descale"
VALUES = 12

# The brain's world, built through the services once per kind of record store (this module's and
# the build suite's tests all start from it), then copied below the ports into each test's stores.
BUILT: dict[type, tuple[Brain, world_copies.WorldCopy]] = {}


@pytest.fixture
def brain(c: Container, clock: FakeClock) -> Brain:
    """One key written VALUES times, keys that hold it in another case or as a part, other keys, an
    unkeyed fact, a deleted current value, statuses superseded and not, and an expired event."""
    kind = type(c.adapters.records)
    if kind in BUILT:
        brain, world = BUILT[kind]
        world_copies.put_back(world, c, clock)
        return brain.model_copy(deep=True)
    brain = build_brain(c, clock)
    BUILT[kind] = (brain, world_copies.take(c, clock))
    return brain


def build_brain(c: Container, clock: FakeClock) -> Brain:
    brain = c.brains.create("Default", slug="default")

    def fact(text: str, key: str | None, **more: Any) -> str:
        return c.memories.store(brain, MemoryInput(MemoryType.fact, text, key=key, **more)).memory.id

    event = c.memories.store(brain, MemoryInput(MemoryType.event, "The kettle was descaled.")).memory.id
    clock.advance(40 * 86_400)
    assert c.memories.expire_events(brain) == 1, event
    c.memories.store(brain, MemoryInput(MemoryType.event, "The boiler was serviced."))
    for n in range(VALUES):
        fact(f"The kettle descales every {n} days.", KEY, source_agent="a" if n % 2 else "b")
    fact("The office kettle descales weekly.", "Office.KETTLE.Descale.v2")
    fact("The shed door sticks.", "shed.door")
    fact("Nobody keyed this fact about kettles.", None)
    gone = fact("The garage kettle descales monthly.", "garage.kettle.descale")
    c.memories.delete(brain, gone)
    for n in range(3):
        c.memories.store(
            brain, MemoryInput(MemoryType.status, f"Deploy {n}", subject="Release Train", status_value=str(n))
        )
    c.memories.store(brain, MemoryInput(MemoryType.status, "Green", subject="ci", status_value="ok"))
    return brain


def oracle(c: Container, brain: Brain, kinds: list[MemoryType], field: str, text: str | None) -> list[str]:
    """Every memory of the types decoded, kept to the current ones (what brain_query read before)."""
    return [
        doc.id
        for doc in c.memories.of_type(brain, kinds)
        if doc.deleted_at is None
        and doc.memory is not None
        and doc.memory.current
        and (text is None or text.lower() in (getattr(doc.memory, field) or "").lower())
    ]


@pytest.mark.parametrize(
    ("kinds", "field", "text"),
    [
        ([MemoryType.fact], "key", None),
        ([MemoryType.fact], "key", KEY),
        ([MemoryType.fact], "key", "KETTLE"),
        ([MemoryType.fact], "key", "descale.v"),
        ([MemoryType.fact], "key", "no such key"),
        ([MemoryType.status], "subject", None),
        ([MemoryType.status], "subject", "release"),
        ([MemoryType.event, MemoryType.decision], "key", None),
    ],
)
def test_the_current_memories_are_the_listing_kept_to_the_current_ones(
    c: Container, brain: Brain, kinds: list[MemoryType], field: Literal["key", "subject"], text: str | None
) -> None:
    # imported here: the other tests, of brain_query and export, run on the code before it too
    from cairn.services.memory.memory_model import Containing

    containing = Containing(field, text) if text is not None else None
    listed = c.memories.current_of_type(brain, kinds, containing=containing)
    assert [d.id for d in listed] == oracle(c, brain, kinds, field, text)


def test_brain_query_decodes_only_the_memories_it_answers_with(
    c: Container, brain: Brain, decoded: list[str]
) -> None:
    by_key = c.zengram.query({"type": "fact", "key": KEY}).body
    answered = [row["id"] for row in by_key["results"]]
    assert sorted(row["key"] for row in by_key["results"]) == ["Office.KETTLE.Descale.v2", KEY]
    assert sorted(decoded) == sorted(answered)  # not the 11 superseded values, nor the deleted one

    decoded.clear()
    by_subject = c.zengram.query({"type": "statuses", "subject": "RELEASE"}).body
    assert [row["status"] for row in by_subject["results"]] == ["2"]
    assert decoded == [by_subject["results"][0]["id"]]


def test_brain_query_reads_the_text_of_the_rows_it_shows_only(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    text = c.memories.text
    monkeypatch.setattr(c.memories, "text", lambda doc: read.append(doc.id) or text(doc))
    every = c.zengram.query({"type": "fact"}).body
    assert every["count"] == 4 and sorted(read) == sorted(r["id"] for r in every["results"])

    read.clear()
    newest = c.zengram.query({"type": "fact", "limit": "2"}).body
    assert [r["id"] for r in newest["results"]] == [r["id"] for r in every["results"][:2]] == read


def test_an_export_of_active_memories_decodes_only_those(
    c: Container, brain: Brain, decoded: list[str]
) -> None:
    active = c.zengram.export({"type": "fact"}).body
    assert active["total"] == 4 and len(decoded) == 4
    decoded.clear()
    everything = c.zengram.export({"type": "fact", "active_only": "false"}).body
    assert everything["total"] == VALUES + 4 and len(decoded) == VALUES + 4


@pytest.fixture
def records_read(records: RecordStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The document records the store hands out (listings and batch reads) while the test runs."""
    seen: list[str] = []
    query, get_many = records.query, records.get_many

    def counted(items: Any) -> None:
        seen.extend(i.sk for i in items if i.sk.startswith("doc#"))

    def counting_query(*args: Any, **kwargs: Any) -> Any:
        page = query(*args, **kwargs)
        counted(page.items)
        return page

    def counting_get_many(keys: Any) -> Any:
        found = get_many(keys)
        counted(found.values())
        return found

    monkeypatch.setattr(records, "query", counting_query)
    monkeypatch.setattr(records, "get_many", counting_get_many)
    return seen


def test_brain_query_reads_no_record_of_a_superseded_value(
    c: Container, brain: Brain, records_read: list[str]
) -> None:
    c.memories.current_of_type(brain, [MemoryType.fact])  # the brain's entries are complete already
    records_read.clear()
    by_key = c.zengram.query({"type": "fact", "key": KEY}).body
    assert sorted(row["key"] for row in by_key["results"]) == ["Office.KETTLE.Descale.v2", KEY]
    # the records of the two current values holding the key, not the 11 values before the kettle's
    assert sorted(records_read) == sorted(f"doc#memories/fact/{row['id']}.md" for row in by_key["results"])


@pytest.mark.parametrize(
    ("kinds", "field", "text"),
    [
        ([MemoryType.fact], "key", None),
        ([MemoryType.fact], "key", "KETTLE"),
        ([MemoryType.status], "subject", "release"),
        ([MemoryType.event, MemoryType.decision], "key", None),
    ],
)
def test_memories_stored_before_the_current_entries_existed_are_listed(
    c: Container,
    brain: Brain,
    records: RecordStore,
    tmp_path: Path,
    kinds: list[MemoryType],
    field: Literal["key", "subject"],
    text: str | None,
) -> None:
    """A brain an earlier release wrote has no entries: its first listing builds them, in this
    process and in the next (a new container on the same records), and answers as before."""
    from cairn.services.memory.memory_model import Containing
    from cairn.services.repositories import all_items, documents_pk

    pk = documents_pk(brain.id)
    for item in [*all_items(records, pk, "cur#"), *all_items(records, pk, "current-memories")]:
        records.delete(item.pk, item.sk)
    expected = oracle(c, brain, kinds, field, text)
    containing = Containing(field, text) if text is not None else None
    later = build_container(Settings(data_dir=tmp_path / "later"), replace(c.adapters, records=records))
    for container in (later, c):
        listed = container.memories.current_of_type(brain, kinds, containing=containing)
        assert [d.id for d in listed] == expected
    stored = c.memories.store(brain, MemoryInput(MemoryType.fact, "The kettle descales daily.", key=KEY))
    if kinds == [MemoryType.fact] and text is None:
        expected = [i for i in expected if i != stored.supersedes]
        listed = later.memories.current_of_type(brain, kinds, containing=containing)
        assert sorted(d.id for d in listed) == sorted([*expected, stored.memory.id])


def test_a_build_cut_short_is_finished_by_the_next_listing(
    c: Container, brain: Brain, records: RecordStore, tmp_path: Path
) -> None:
    """Some entries made and no mark (a process stopped while building): the next process makes
    the others and lists every current memory."""
    from cairn.services.repositories import all_items, documents_pk

    pk = documents_pk(brain.id)
    records.delete(pk, "current-memories")
    for item in list(all_items(records, pk, "cur#"))[::2]:
        records.delete(item.pk, item.sk)
    later = build_container(Settings(data_dir=tmp_path / "later"), replace(c.adapters, records=records))
    kinds = [MemoryType.fact, MemoryType.status, MemoryType.event]
    assert [d.id for d in later.memories.current_of_type(brain, kinds)] == oracle(
        c, brain, kinds, "key", None
    )
    assert records.get(pk, "current-memories") is not None


DAMAGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "superseded_by a number": lambda d: d["memory"].__setitem__("superseded_by", 5),
    "superseded_by a list": lambda d: d["memory"].__setitem__("superseded_by", ["mem_x"]),
    "expired_at not a time": lambda d: d["memory"].__setitem__("expired_at", "soon"),
    "deleted_at not a time": lambda d: d.__setitem__("deleted_at", "yesterday-ish"),
    "deleted_at a mapping": lambda d: d.__setitem__("deleted_at", {"at": 1}),
    "deleted_at false": lambda d: d.__setitem__("deleted_at", False),
    "memory a list": lambda d: d.__setitem__("memory", ["fact"]),
    "key a number": lambda d: d["memory"].__setitem__("key", 7),
}


@pytest.mark.parametrize("written", ["over the record", "by a writer", "before the entries"])
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_memory_record_is_refused_as_the_decoded_listing_refuses_it(
    c: Container, brain: Brain, records: RecordStore, tmp_path: Path, damage: str, written: str
) -> None:
    """A field of the wrong kind in the current value's record is damaged_store, as decoding every
    record found it, not a memory silently left out of brain_query and the export: whether the
    record was changed under its entry, written with the entry op a commit adds (entry_ops), or
    in a brain whose entries are built after it."""
    from cairn.domain.errors import DamagedStore
    from cairn.ports.records import Put
    from cairn.services.documents.current_memories import entry_ops
    from cairn.services.repositories import all_items, documents_pk

    current = c.memories.current_of_type(brain, [MemoryType.fact], containing=None)
    target = next(doc for doc in current if doc.memory is not None and doc.memory.key == KEY)
    item = next(i for i in c.documents.repo.raw(brain.id, "") if i.data.get("id") == target.id)
    data = {**item.data, "memory": dict(item.data["memory"])}
    DAMAGES[damage](data)
    put = Put(replace(item, data=data))
    if written == "by a writer":
        records.transact([put, *entry_ops([put])])
    else:
        records.put(put.item)
    if written == "before the entries":
        pk = documents_pk(brain.id)
        for entry in [*all_items(records, pk, "cur#"), *all_items(records, pk, "current-memories")]:
            records.delete(entry.pk, entry.sk)
        c = build_container(Settings(data_dir=tmp_path / "later"), replace(c.adapters, records=records))

    with pytest.raises(DamagedStore):
        oracle(c, brain, [MemoryType.fact], "key", KEY)
    with pytest.raises(DamagedStore):
        c.zengram.query({"type": "fact", "key": KEY})
    with pytest.raises(DamagedStore):
        c.zengram.export({"type": "fact"})
