"""ThoughtMCP's memory rows (services/thoughtmcp/rows.py) on every record store: a row written and
read back whole, written again only at the version read, one user's rows never another's, the
newest first, and removed with their user; the sector embeddings beside them likewise."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.errors import Conflict
from cairn.ports.records import RecordStore
from cairn.services.thoughtmcp.models import Row
from cairn.services.thoughtmcp.rows import ThoughtRows
from cairn.services.thoughtmcp.sectors import VIEWS, SectorVectors
from tests.fakes.embedder import HashingEmbedder, SymbolHashingEmbedder

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def row(memory_id: str, user: str = "alice", minutes: int = 0) -> Row:
    at = T0 + timedelta(minutes=minutes)
    return Row(
        memory_id, user, "s1", "semantic", at, at, None, 0, 1.0, 0.6, 0.5, "general", "", ["porto"], ["t"],
        0.0, 0, "Alice moved to Porto.", f"thoughts/u/{memory_id}.md",
    )  # fmt: skip


def test_a_row_is_read_back_whole_and_written_again_only_at_its_version(records: RecordStore) -> None:
    rows = ThoughtRows(records)
    rows.put("brn_1", row("mem_1"), 0)
    with pytest.raises(Conflict):  # a new row where one exists
        rows.put("brn_1", row("mem_1"), 0)

    (got,) = rows.get("brn_1", "alice", ["mem_1", "mem_none", ""]).values()
    assert replace(got, version=0) == row("mem_1") and got.version > 0
    stronger = replace(got, strength=0.4, access_count=1, last_access=T0 + timedelta(hours=1))
    rows.put("brn_1", stronger, got.version)
    with pytest.raises(Conflict):  # a reinforcement that read the row before that write
        rows.put("brn_1", replace(got, strength=0.9), got.version)
    again = rows.get("brn_1", "alice", ["mem_1"])["mem_1"]
    assert again.strength == 0.4 and again.access_count == 1 and again.last_access == T0 + timedelta(hours=1)


def test_a_users_rows_are_only_theirs_and_newest_first(records: RecordStore) -> None:
    rows = ThoughtRows(records)
    for i in range(4):
        rows.put("brn_1", row(f"mem_{i}", minutes=i), 0)
    rows.put("brn_1", row("mem_b", user="bob"), 0)
    rows.put("brn_2", row("mem_x"), 0)

    assert sorted(r.id for r in rows.all("brn_1", "alice")) == ["mem_0", "mem_1", "mem_2", "mem_3"]
    assert rows.get("brn_1", "alice", ["mem_b", "mem_x"]) == {}
    assert [r.id for r in rows.all("brn_1", "bob")] == ["mem_b"]
    assert [r.id for r in rows.newest("brn_1", "alice", 2)] == ["mem_3", "mem_2"]  # ids are time-ordered


def test_ops_commit_together_or_not_at_all_and_a_user_goes_whole(records: RecordStore) -> None:
    rows = ThoughtRows(records)
    rows.put("brn_1", row("mem_1"), 0)
    rows.put("brn_1", row("mem_2"), 0)
    one, two = rows.get("brn_1", "alice", ["mem_1", "mem_2"]).values()
    with pytest.raises(Conflict):  # one stale op fails the other too
        rows.commit(
            [rows.put_op("brn_1", replace(one, link_count=2), one.version), rows.put_op("brn_1", two, 0)]
        )
    assert rows.get("brn_1", "alice", ["mem_1"])["mem_1"].link_count == 0
    rows.commit([rows.delete_op("brn_1", two, two.version)])
    assert list(rows.get("brn_1", "alice", ["mem_1", "mem_2"])) == ["mem_1"]

    rows.put("brn_1", row("mem_b", user="bob"), 0)
    assert rows.delete_user("brn_1", "alice") == 1
    assert rows.all("brn_1", "alice") == [] and [r.id for r in rows.all("brn_1", "bob")] == ["mem_b"]


def test_sector_vectors_commit_with_the_row_are_read_back_by_their_model_and_go_with_their_user(
    records: RecordStore,
) -> None:
    rows, sectors = ThoughtRows(records), SectorVectors(records, HashingEmbedder(48))
    made = sectors.embed("Alice moved to Porto after the reorg.", row("mem_1"))
    assert set(made.vectors) == set(VIEWS) and made.version == ""
    rows.commit([rows.put_op("brn_1", row("mem_1"), 0), sectors.put_op("brn_1", "alice", "mem_1", made)])
    with pytest.raises(Conflict):  # the row exists: its sector vectors are not written either
        rows.commit([rows.put_op("brn_1", row("mem_2"), 0), sectors.put_op("brn_1", "alice", "mem_2", made),
                     rows.put_op("brn_1", row("mem_1"), 0)])  # fmt: skip
    got = sectors.get("brn_1", "alice", ["mem_1", "mem_2", ""])
    assert list(got) == ["mem_1"]
    for view in VIEWS:  # stored as float16: a cosine within 1e-3 of the one embedded
        assert float(got["mem_1"][view] @ made.vectors[view]) == pytest.approx(1.0, abs=1e-3)
    assert [r.id for r in rows.all("brn_1", "alice")] == ["mem_1"]  # not among the user's rows
    assert sectors.get("brn_1", "bob", ["mem_1"]) == {} and sectors.get("brn_2", "alice", ["mem_1"]) == {}
    assert SectorVectors(records, HashingEmbedder(64)).get("brn_1", "alice", ["mem_1"]) == {}  # another model

    rows.commit([sectors.delete_op("brn_1", "alice", "mem_1")])
    assert sectors.get("brn_1", "alice", ["mem_1"]) == {}
    records.transact(
        [sectors.put_op("brn_1", "alice", "mem_3", made), sectors.put_op("brn_1", "bob", "mem_4", made)]
    )
    assert sectors.delete_user("brn_1", "alice") == 1
    assert list(sectors.get("brn_1", "bob", ["mem_4"])) == ["mem_4"]


def test_a_sector_record_holds_its_vector_version_and_is_rewritten_only_at_the_version_read(
    records: RecordStore,
) -> None:
    old, new = SectorVectors(records, HashingEmbedder(48)), SectorVectors(records, SymbolHashingEmbedder(48))
    memory, plain = row("mem_1"), row("mem_2")
    text = "Alice moved to Porto 🚋 after the reorg."
    records.transact([old.put_op("brn_1", "alice", "mem_1", old.embed(text, memory)),
                      old.put_op("brn_1", "alice", "mem_2", old.embed("Alice moved.", plain))])  # fmt: skip
    held = new.items("brn_1", [("alice", "mem_1"), ("alice", "mem_2"), ("bob", "mem_1")])
    assert sorted(held) == [("alice", "mem_1"), ("alice", "mem_2")]
    assert new.version(text, memory) == "symbols-1" and new.version("Alice moved.", plain) == ""
    assert not new.current(held["alice", "mem_1"], new.version(text, memory))  # an older release's
    assert new.current(held["alice", "mem_2"], "")  # what the new release would store too
    assert not SectorVectors(records, HashingEmbedder(64)).current(
        held["alice", "mem_2"], ""
    )  # another model

    made = new.embed(text, memory)
    assert made.version == "symbols-1"
    first = held["alice", "mem_1"]
    records.transact([new.put_op("brn_1", "alice", "mem_1", made, expected_version=first.version)])
    again = new.items("brn_1", [("alice", "mem_1")])["alice", "mem_1"]
    assert again.data["version"] == "symbols-1" and new.current(again, "symbols-1")
    with pytest.raises(Conflict):  # written since it was read
        records.transact([new.put_op("brn_1", "alice", "mem_1", made, expected_version=first.version)])
