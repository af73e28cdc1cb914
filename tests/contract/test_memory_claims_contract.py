"""The records typed memories keep beside their documents (services/memory/claims.py) on every
record store: claims taken only at the version read, supersede lines per fact key and status
subject, the memories-by-time index read newest first and oldest first, and forgetting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.errors import Conflict
from cairn.domain.models import MemoryType
from cairn.ports.records import RecordStore
from cairn.services.memory.claims import MemoryClaims

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def test_a_text_claim_is_taken_once_and_then_only_at_its_version(records: RecordStore) -> None:
    claims = MemoryClaims(records)
    fresh = claims.text("brn_1", "fact", "global", "abc")
    assert fresh.doc_id is None and fresh.version == 0

    records.transact([claims.take(fresh, "mem_1")])
    held = claims.text("brn_1", "fact", "global", "abc")
    assert held.doc_id == "mem_1" and held.version > 0
    with pytest.raises(Conflict):  # a second writer that read it unheld loses
        records.transact([claims.take(fresh, "mem_2")])
    records.transact([claims.take(held, "mem_3")])
    assert claims.text("brn_1", "fact", "global", "abc").doc_id == "mem_3"
    # the same text under another type, client or brain is another claim
    assert claims.text("brn_1", "event", "global", "abc").doc_id is None
    assert claims.text("brn_1", "fact", "cli", "abc").doc_id is None
    assert claims.text("brn_2", "fact", "global", "abc").doc_id is None


def test_only_a_keyed_fact_and_a_status_with_a_subject_have_a_line(records: RecordStore) -> None:
    claims = MemoryClaims(records)
    assert claims.line("brn_1", MemoryType.event, "k", "s") is None
    assert claims.line("brn_1", MemoryType.decision, "k", "s") is None
    assert claims.line("brn_1", MemoryType.fact, None, "s") is None
    assert claims.line("brn_1", MemoryType.status, "k", None) is None
    key = claims.line("brn_1", MemoryType.fact, "home city", None)
    subject = claims.line("brn_1", MemoryType.status, None, "home city")
    assert key is not None and subject is not None and key.key != subject.key  # two namespaces

    records.transact([claims.take(key, "mem_1")])
    again = claims.line("brn_1", MemoryType.fact, "home city", None)
    assert again is not None and again.doc_id == "mem_1"
    unrelated = claims.line("brn_1", MemoryType.status, None, "home city")
    assert unrelated is not None and unrelated.doc_id is None
    long_key = "ключ " * 400  # caller text of any length and alphabet
    line = claims.line("brn_1", MemoryType.fact, long_key, None)
    assert line is not None
    records.transact([claims.take(line, "mem_2")])
    held = claims.line("brn_1", MemoryType.fact, long_key, None)
    assert held is not None and held.doc_id == "mem_2"


def test_the_time_index_reads_newest_first_since_and_oldest_first_in_pages(records: RecordStore) -> None:
    claims = MemoryClaims(records)
    for i in range(7):
        records.transact([claims.stamp("brn_1", T0 + timedelta(minutes=i), f"mem_{i}")])
    records.transact([claims.stamp("brn_2", T0, "mem_other")])

    assert claims.since("brn_1", T0 + timedelta(minutes=4), limit=10) == ["mem_6", "mem_5", "mem_4"]
    assert claims.since("brn_1", T0, limit=2)[:2] == ["mem_6", "mem_5"]
    assert claims.since("brn_1", T0 + timedelta(hours=1), limit=10) == []

    pages = list(claims.oldest_first("brn_1", page=3))
    assert [len(p) for p in pages if p] == [3, 3, 1]
    entries = [e for p in pages for e in p]
    assert [e.doc_id for e in entries] == [f"mem_{i}" for i in range(7)]
    assert entries[2].no_later_than(T0 + timedelta(minutes=2))
    assert not entries[3].no_later_than(T0 + timedelta(minutes=2, seconds=59))


def test_forgetting_removes_what_names_the_memories_and_nothing_else(records: RecordStore) -> None:
    claims = MemoryClaims(records)
    records.transact(
        [
            claims.take(claims.text("brn_1", "fact", "global", "a"), "mem_1"),
            claims.take(claims.text("brn_1", "fact", "global", "b"), "mem_2"),
            claims.stamp("brn_1", T0, "mem_1"),
            claims.stamp("brn_1", T0 + timedelta(seconds=1), "mem_2"),
        ]
    )
    claims.give_text("brn_1", "event", "global", "c", "mem_1")  # an update pointed another text at it

    assert claims.forget("brn_1", {"mem_1"}) == 3
    assert claims.text("brn_1", "fact", "global", "a").doc_id is None
    assert claims.text("brn_1", "event", "global", "c").doc_id is None
    assert claims.text("brn_1", "fact", "global", "b").doc_id == "mem_2"
    assert claims.since("brn_1", T0, limit=10) == ["mem_2"]
    assert claims.forget("brn_1", {"mem_1"}) == 0
