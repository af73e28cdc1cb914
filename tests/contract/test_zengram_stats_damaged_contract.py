"""zengram's stats leave out a memory whose stored text a read found damaged, as its query,
briefing and export leave it out (services/documents/damaged_marks.py), on every record store:
from the kept counts and from every record read alike; a memory mended or written again counts
again and its mark goes. Stats itself reads no memory's bytes but those a read marked."""

from __future__ import annotations

import sqlite3
from typing import Any
from unittest.mock import patch

import pytest

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container
from cairn.domain.errors import DamagedContent, DamagedStore
from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.documents.damaged_marks import MARK
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.repositories import documents_pk
from cairn.services.zengram.kept_stats import counted
from tests.fakes.records import MemoryRecordStore

FIELDS = ("total_memories", "vectors_count", "active", "superseded", "by_type")


def brain_of(c: Container) -> tuple[Brain, list[Document]]:
    brain = c.brains.create("Default", slug="default")
    facts = [
        c.memories.store(
            brain, MemoryInput(MemoryType.fact, f"Pump {n} runs at {n + 2} bar.", key=f"pump.{n}")
        )
        for n in range(4)
    ]
    c.memories.store(brain, MemoryInput(MemoryType.event, "The boiler was serviced."))
    return brain, [s.memory for s in facts]


def stats(c: Container) -> dict[str, Any]:
    body = c.zengram.stats().body
    return {k: body[k] for k in FIELDS}


def marks(c: Container, brain: Brain) -> list[str]:
    return [i.sk for i in c.adapters.records.query(documents_pk(brain.id), MARK).items]


@pytest.mark.parametrize("kept", [True, False], ids=["kept-counts", "every-record"])
@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_stats_leave_out_a_memory_a_read_found_damaged(c: Container, kept: bool, how: str) -> None:
    brain, facts = brain_of(c)
    whole = stats(c)
    assert whole["total_memories"] == 5 and whole["by_type"]["fact"] == 4
    bad = facts[1]
    if how == "deleted":
        c.adapters.blobs.delete(bad.blob_key)
    else:
        c.adapters.blobs.put(bad.blob_key, c.adapters.blobs.get(bad.blob_key)[:5])
    query = c.zengram.query({"type": "fact"}).body
    assert query["count"] == 3 and [u["id"] for u in query["unreadable"]] == [bad.id]
    with patch("cairn.services.zengram.briefing.counted", new=counted if kept else lambda *_: None):
        left = stats(c)  # not kept: as while the counts are being built, from every record read
    assert left["total_memories"] == 4 and left["active"] == 4 and left["by_type"]["fact"] == 3
    assert left["vectors_count"] == whole["vectors_count"] - bad.chunk_count
    assert left["superseded"] == 0
    assert marks(c, brain) == [f"{MARK}{bad.id}"]


def test_a_memory_mended_counts_again_and_its_mark_goes(c: Container) -> None:
    brain, facts = brain_of(c)
    bad = facts[0]
    data = c.adapters.blobs.get(bad.blob_key)
    c.adapters.blobs.delete(bad.blob_key)
    c.zengram.export({})
    assert stats(c)["total_memories"] == 4
    c.adapters.blobs.put(bad.blob_key, data)  # restored from a backup
    assert stats(c)["total_memories"] == 5 and marks(c, brain) == []


def test_the_mark_of_a_memory_deleted_goes(c: Container) -> None:
    brain, facts = brain_of(c)
    bad = facts[2]
    c.adapters.blobs.delete(bad.blob_key)
    c.zengram.briefing({"since": "2000-01-01", "format": "full"})
    assert stats(c)["total_memories"] == 4 and marks(c, brain)
    with pytest.raises(DamagedContent):  # read alone: 503 over HTTP
        c.zengram.update(bad.id, {"content": "Pump 2 runs at 5 bar now."})
    c.memories.delete(brain, bad.id)
    assert stats(c)["total_memories"] == 4 and marks(c, brain) == []


def test_the_mark_of_bytes_written_over_goes(c: Container) -> None:
    """A document written again has new bytes under another key: the old key's mark no longer holds."""
    brain = c.brains.create("Shore", slug="shore")
    doc = c.documents.write(brain, "notes/a.md", b"# A\n\nThe ledger moved.").document
    c.adapters.blobs.delete(doc.blob_key)
    with pytest.raises(DamagedContent):
        c.documents.read(brain, "notes/a.md")
    assert [d.id for d in c.documents.damaged_now(brain.id)] == [doc.id]
    mark = c.adapters.records.get(documents_pk(brain.id), f"{MARK}{doc.id}")
    assert mark is not None and mark.data == {"version": doc.version}  # no key: it holds the digest
    c.documents.write(brain, "notes/a.md", b"# A\n\nThe ledger moved again.")
    assert c.documents.damaged_now(brain.id) == [] and marks(c, brain) == []


def test_the_mark_of_a_document_erased_goes_with_it(c: Container) -> None:
    """An erasure removes every record naming the document: its damaged mark too, at once, not at
    the brain's next stats (which may never come)."""
    brain = c.brains.create("Shore", slug="shore")
    doc = c.documents.write(brain, "memory/agent/ada/a.md", b"# A\n\nAda keeps the ledger.").document
    kept = c.documents.write(brain, "notes/b.md", b"# B\n\nThe ledger moved.").document
    for damaged in (doc, kept):
        c.adapters.blobs.delete(damaged.blob_key)
        with pytest.raises(DamagedContent):
            c.documents.read(brain, damaged.path)
    assert sorted(marks(c, brain)) == sorted(f"{MARK}{d.id}" for d in (doc, kept))
    receipt = c.erasure.erase("agent_scope", "ada", [brain.slug])
    assert receipt.removed["documents"] == 1
    assert marks(c, brain) == [f"{MARK}{kept.id}"]  # the other document's stays


@pytest.mark.parametrize("damage", ["not JSON", "not an object"])
def test_a_damaged_mark_is_dropped_not_a_refusal_of_stats(
    c: Container, request: pytest.FixtureRequest, damage: str
) -> None:
    """A mark is Cairn's own note of what a read met, made again by the next read: one changed
    outside Cairn is dropped (and said in the log), where it refused the brain's stats for good
    (503 damaged_store, "restore the store from a backup")."""
    records = c.adapters.records
    if isinstance(records, MemoryRecordStore):
        pytest.skip("the in-memory store holds no raw rows to damage")
    brain, facts = brain_of(c)
    pk, sk = documents_pk(brain.id), f"{MARK}{facts[0].id}"
    raw = "{cut sho" if damage == "not JSON" else "[1, 2]"

    def damaged() -> None:
        if isinstance(records, SqliteRecordStore):
            with sqlite3.connect(request.getfixturevalue("tmp_path") / "records.db") as conn:
                conn.execute("INSERT OR REPLACE INTO items VALUES (?, ?, ?, 1)", (pk, sk, raw))
        else:
            item = {"pk": {"S": pk}, "sk": {"S": sk}, "v": {"N": "1"}, "d": {"S": raw}}
            records.client.put_item(TableName=records.table, Item=item)  # type: ignore[attr-defined]
        with pytest.raises(DamagedStore):  # as any other record is refused when damaged
            records.get(pk, sk)

    damaged()
    assert stats(c)["total_memories"] == 5
    assert records.get(pk, sk) is None
    damaged()
    c.adapters.blobs.delete(facts[0].blob_key)  # a read that meets the damage writes over it
    c.zengram.export({})
    assert stats(c)["total_memories"] == 4 and marks(c, brain) == [sk]
