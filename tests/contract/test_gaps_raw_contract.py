"""Knowledge gaps and raw data on every record store: a gap keeps only the query's hash and is
logged once per hash, whatever the concurrency; one raw row per (document, source) unless
overwritten."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain
from cairn.ports.blobs import BlobStore
from cairn.ports.records import Item, RecordStore
from cairn.services.gbrain.gaps import GapService, query_hash
from cairn.services.gbrain.raw_data import RawDataChanged, RawDataExists, RawDataService
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock

NOW = datetime(2026, 5, 1, tzinfo=UTC)
BRAIN = Brain(
    id="brn_1", slug="work", name="Work", embedding_model="m", embedding_dim=4, created_at=NOW, updated_at=NOW
)


def test_a_gap_stores_only_the_hash_and_is_idempotent(records: RecordStore) -> None:
    gaps = GapService(records, FakeClock(NOW))
    secret = "what is alice's salary?"

    first, created = gaps.log(BRAIN, secret, context="asked in the standup", page_id="doc_1")
    again, created_again = gaps.log(BRAIN, secret, context="another context")
    other, _ = gaps.log(BRAIN, "another question")

    assert created and not created_again and again.id == first.id
    assert first.query_hash == query_hash(secret) and other.id == first.id + 1
    stored = [i.data for pk in (f"gaps#{BRAIN.id}",) for i in records.query(pk).items]
    assert all(secret not in str(d) and "standup" not in str(d) for d in stored)
    assert [g.id for g in gaps.list(BRAIN)] == [other.id, first.id]  # newest first


def test_resolved_gaps_are_listed_only_when_asked(records: RecordStore) -> None:
    gaps = GapService(records, FakeClock(NOW))
    a, _ = gaps.log(BRAIN, "a?")
    b, _ = gaps.log(BRAIN, "b?")
    gaps.resolve(BRAIN, a.id, by="work::answers/a")

    assert [g.id for g in gaps.list(BRAIN)] == [b.id]
    assert [g.id for g in gaps.list(BRAIN, resolved=True)] == [b.id, a.id]
    assert gaps.list(BRAIN, resolved=True, limit=1)[0].id == b.id
    with pytest.raises(InvalidInput, match="query must not be empty"):
        gaps.log(BRAIN, "  ")
    with pytest.raises(InvalidInput, match="context exceeds maximum length of 500"):
        gaps.log(BRAIN, "c?", context="x" * 501)


def test_concurrent_logs_of_one_question_make_one_gap(records: RecordStore) -> None:
    gaps = GapService(records, FakeClock(NOW))
    ids: list[int] = []
    start = threading.Barrier(8)

    def log() -> None:
        start.wait()
        ids.append(gaps.log(BRAIN, "who owns billing?")[0].id)

    threads = [threading.Thread(target=log) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(gaps.list(BRAIN, resolved=True)) == 1
    assert gaps.count(BRAIN) == 1


def test_raw_data_keeps_one_row_per_source_unless_overwritten(records: RecordStore) -> None:
    raw = RawDataService(records, MemoryBlobStore(), FakeClock(NOW))

    first = raw.put(BRAIN, "doc_1", "crustdata", {"employees": 12})
    with pytest.raises(RawDataExists):
        raw.put(BRAIN, "doc_1", "crustdata", {"employees": 13})
    kept = raw.get(BRAIN, "doc_1", "crustdata")
    replaced = raw.put(BRAIN, "doc_1", "crustdata", {"employees": 14}, overwrite=True)
    other = raw.put(BRAIN, "doc_1", "exa", {"hits": []})

    assert kept is not None and kept[1] == {"employees": 12} and kept[0].id == first.id
    assert replaced.id > first.id and raw.get(BRAIN, "doc_1", "crustdata")[1] == {"employees": 14}  # type: ignore[index]
    assert sorted(raw.sources(BRAIN, "doc_1")) == ["crustdata", "exa"] and other.id > replaced.id
    for bad, message in (([1, 2], "must be a JSON object"), ("x", "must be a JSON object")):
        with pytest.raises(InvalidInput, match=message):
            raw.put(BRAIN, "doc_1", "api", bad)
    with pytest.raises(InvalidInput, match="source must not be empty"):
        raw.put(BRAIN, "doc_1", " ", {})
    assert raw.remove_all_of(BRAIN, "doc_1") == 2 and raw.sources(BRAIN, "doc_1") == []


def test_a_raw_row_written_at_an_expected_version_never_replaces_another_writers(
    records: RecordStore,
) -> None:
    """What a restore writes (services/archive/restore.py): decided on the row it read, so a row
    stored meanwhile fails the write instead of being replaced."""
    raw = RawDataService(records, MemoryBlobStore(), FakeClock(NOW))
    raw.put(BRAIN, "doc_1", "exa", {"v": "first"})
    with pytest.raises(RawDataChanged):  # it read no row: one was stored meanwhile
        raw.put(BRAIN, "doc_1", "exa", {"v": "mine"}, overwrite=True, expected_version=0)
    held = raw.get(BRAIN, "doc_1", "exa")
    assert held is not None and held[1] == {"v": "first"}

    raw.put(BRAIN, "doc_1", "exa", {"v": "theirs"}, overwrite=True)  # after this writer read `held`
    with pytest.raises(RawDataChanged):
        raw.put(BRAIN, "doc_1", "exa", {"v": "mine"}, overwrite=True, expected_version=held[0].version)
    now = raw.get(BRAIN, "doc_1", "exa")
    assert now is not None and now[1] == {"v": "theirs"}

    written = raw.put(BRAIN, "doc_1", "exa", {"v": "mine"}, overwrite=True, expected_version=now[0].version)
    assert raw.get(BRAIN, "doc_1", "exa") == (written, {"v": "mine"})
    assert written.version > now[0].version


class _Racing:
    """A record store whose first `put` lets another writer go first (`before`): a write that
    read no row, or a row, and then loses its conditional put to that writer, deterministically."""

    def __init__(self, records: RecordStore, before: Callable[[], object]) -> None:
        self.records = records
        self.before: Callable[[], object] | None = before

    def put(self, item: Item, expected_version: int | None = None) -> Item:
        if self.before is not None:
            go, self.before = self.before, None
            go()
        return self.records.put(item, expected_version=expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)


class _Stored:
    """A blob store that remembers the keys each writer stored."""

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.keys: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.keys.append(key)
        self.blobs.put(key, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.blobs, name)


@pytest.mark.parametrize(
    ("mine", "theirs", "kwargs", "lost"),
    [
        ({"v": 1}, {"v": 1}, {}, RawDataExists),  # the very same bytes: the winner's must stay
        ({"v": 1}, {"v": 2}, {}, RawDataExists),
        ({"v": 1}, {"v": 1}, {"overwrite": True, "expected_version": 0}, RawDataChanged),  # a restore
        ({"v": 1}, {"v": 2}, {"overwrite": True, "expected_version": 0}, RawDataChanged),
    ],
)
def test_a_raw_write_that_loses_its_race_leaves_no_bytes_and_the_winners_stay(
    records: RecordStore,
    blobs: BlobStore,
    mine: dict[str, int],
    theirs: dict[str, int],
    kwargs: dict[str, Any],
    lost: type[Exception],
) -> None:
    theirs_blobs, my_blobs = _Stored(blobs), _Stored(blobs)
    other = RawDataService(records, cast(BlobStore, theirs_blobs), FakeClock(NOW))
    racing = _Racing(records, lambda: other.put(BRAIN, "doc_1", "exa", theirs))
    raw = RawDataService(cast(RecordStore, racing), cast(BlobStore, my_blobs), FakeClock(NOW))

    with pytest.raises(lost):
        raw.put(BRAIN, "doc_1", "exa", mine, **kwargs)

    assert len(my_blobs.keys) == 1 and not blobs.exists(my_blobs.keys[0])
    held = raw.get(BRAIN, "doc_1", "exa")
    assert held is not None and held[1] == theirs and blobs.exists(held[0].blob_key)
    assert theirs_blobs.keys == [held[0].blob_key]


def test_an_overwrite_that_retries_keeps_only_the_bytes_its_row_names(
    records: RecordStore, blobs: BlobStore
) -> None:
    stored = _Stored(blobs)
    other = RawDataService(records, blobs, FakeClock(NOW))
    other.put(BRAIN, "doc_1", "exa", {"v": 0})
    racing = _Racing(records, lambda: other.put(BRAIN, "doc_1", "exa", {"v": 2}, overwrite=True))
    raw = RawDataService(cast(RecordStore, racing), cast(BlobStore, stored), FakeClock(NOW))

    written = raw.put(BRAIN, "doc_1", "exa", {"v": 1}, overwrite=True)  # loses once, then wins
    again = raw.put(BRAIN, "doc_1", "exa", {"v": 1}, overwrite=True)  # the same bytes: named again

    assert stored.keys == [written.blob_key] == [again.blob_key]
    assert raw.get(BRAIN, "doc_1", "exa") == (again, {"v": 1})
