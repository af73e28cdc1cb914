"""RecordStore contract: every adapter (see conftest.RECORD_STORES) must pass all of it.

One file past 500 lines: the port keeps one contract suite, so an adapter passes all of it or is
not a RecordStore."""

from __future__ import annotations

import base64
import json
import math
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from cairn.adapters.local.sqlite_records import SqliteRecordStore, prefix_upper_bound
from cairn.domain.errors import Conflict, InvalidInput
from cairn.ports.records import (
    MAX_GET_MANY,
    MAX_PK_BYTES,
    MAX_SCAN_PREFIXES,
    MAX_SK_BYTES,
    Delete,
    Item,
    Put,
    RecordStore,
    ScrubbableRecords,
)
from tests.contract.aws_storage import dynamodb_records
from tests.fakes.records import MemoryRecordStore

PK = "brain#1"


def _run_in_threads(n: int, work: Callable[[int], None]) -> None:
    start = threading.Barrier(n)

    def run(i: int) -> None:
        start.wait()
        work(i)

    with ThreadPoolExecutor(n) as pool:
        for future in [pool.submit(run, i) for i in range(n)]:
            future.result()


def _increment(store: RecordStore) -> None:
    """One optimistic read-modify-write, retried until no one else got in between."""
    while True:
        current = store.get(PK, "counter")
        assert current is not None
        try:
            store.put(Item(PK, "counter", {"n": current.data["n"] + 1}), current.version)
            return
        except Conflict:
            continue


# -- single item ---------------------------------------------------------------------------------


def test_get_missing_is_none(records: RecordStore) -> None:
    assert records.get(PK, "nope") is None


def test_put_then_get_round_trips_plain_json(records: RecordStore) -> None:
    data = {
        "title": "Notes — été 🌲",
        "n": 3,
        "x": 1.5,
        "ok": True,
        "none": None,
        "tags": ["a", "b"],
        "nested": {"deep": [{"k": "v"}]},
    }
    stored = records.put(Item(PK, "doc#1", data))
    assert stored == Item(PK, "doc#1", data, 1)
    assert records.get(PK, "doc#1") == stored


def test_every_write_increments_the_version(records: RecordStore) -> None:
    # The caller's item.version is ignored: the store owns versions.
    versions = [records.put(Item(PK, "k", {"i": i}, version=99)).version for i in range(3)]
    assert versions == [1, 2, 3]
    assert records.get(PK, "k") == Item(PK, "k", {"i": 2}, 3)


def test_returned_data_is_not_shared_with_the_store(records: RecordStore) -> None:
    records.put(Item(PK, "k", {"list": [1]}))
    got = records.get(PK, "k")
    assert got is not None
    got.data["list"].append(2)
    assert records.get(PK, "k") == Item(PK, "k", {"list": [1]}, 1)


def test_expected_version_zero_creates_only(records: RecordStore) -> None:
    assert records.put(Item(PK, "k", {"v": 1}), expected_version=0).version == 1
    with pytest.raises(Conflict):
        records.put(Item(PK, "k", {"v": 2}), expected_version=0)
    assert records.get(PK, "k") == Item(PK, "k", {"v": 1}, 1)


def test_stale_version_conflicts_and_changes_nothing(records: RecordStore) -> None:
    records.put(Item(PK, "k", {"v": 1}))
    records.put(Item(PK, "k", {"v": 2}), expected_version=1)
    with pytest.raises(Conflict, match="k"):
        records.put(Item(PK, "k", {"v": 3}), expected_version=1)
    with pytest.raises(Conflict):
        records.put(Item(PK, "missing", {"v": 1}), expected_version=1)
    assert records.get(PK, "k") == Item(PK, "k", {"v": 2}, 2)
    assert records.get(PK, "missing") is None


def test_delete_reports_existence_and_honours_versions(records: RecordStore) -> None:
    records.put(Item(PK, "k", {}))
    records.put(Item(PK, "k", {}))
    with pytest.raises(Conflict):
        records.delete(PK, "k", expected_version=1)
    assert records.get(PK, "k") is not None
    assert records.delete(PK, "k", expected_version=2) is True
    assert records.get(PK, "k") is None
    assert records.delete(PK, "k") is False
    with pytest.raises(Conflict):
        records.delete(PK, "k", expected_version=1)
    with pytest.raises(InvalidInput):
        records.delete(PK, "k", expected_version=0)


def test_recreated_item_starts_at_version_one(records: RecordStore) -> None:
    records.put(Item(PK, "k", {}))
    records.put(Item(PK, "k", {}))
    records.delete(PK, "k")
    assert records.put(Item(PK, "k", {}), expected_version=0).version == 1


@pytest.mark.parametrize(
    "data", [{"s": {1, 2}}, {"x": math.nan}, {"b": b"bytes"}, {"t": "a \udfff b"}, {"\ud800": 1}]
)
def test_non_json_data_is_rejected(records: RecordStore, data: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        records.put(Item(PK, "k", data))
    assert records.get(PK, "k") is None


@pytest.mark.parametrize(("pk", "sk"), [("", "k"), (PK, ""), (PK, "\ud800")])
def test_bad_keys_are_rejected(records: RecordStore, pk: str, sk: str) -> None:
    with pytest.raises(InvalidInput):
        records.put(Item(pk, sk, {}))


# -- transactions --------------------------------------------------------------------------------


def test_transact_applies_every_op_and_returns_puts_in_order(records: RecordStore) -> None:
    records.put(Item(PK, "old", {}))
    records.put(Item(PK, "gone", {}))
    written = records.transact(
        [Put(Item(PK, "new", {"a": 1}), 0), Delete(PK, "gone"), Put(Item(PK, "old", {"b": 2}), 1)]
    )
    assert written == [Item(PK, "new", {"a": 1}, 1), Item(PK, "old", {"b": 2}, 2)]
    assert records.get(PK, "gone") is None
    assert records.transact([]) == []


def test_transact_is_all_or_nothing(records: RecordStore) -> None:
    records.put(Item(PK, "a", {"v": 1}))
    records.put(Item(PK, "b", {"v": 1}))
    ops: list[Put | Delete] = [
        Put(Item(PK, "a", {"v": 2}), 1),
        Delete(PK, "b", 1),
        Put(Item(PK, "c", {"v": 1}), 0),
        Put(Item(PK, "stale", {"v": 1}), 7),  # fails: no such item
    ]
    with pytest.raises(Conflict, match="stale"):
        records.transact(ops)
    assert records.get(PK, "a") == Item(PK, "a", {"v": 1}, 1)
    assert records.get(PK, "b") == Item(PK, "b", {"v": 1}, 1)
    assert records.get(PK, "c") is None


def test_transact_rejects_two_ops_on_one_item(records: RecordStore) -> None:
    with pytest.raises(InvalidInput):
        records.transact([Put(Item(PK, "a", {})), Delete(PK, "a")])
    assert records.get(PK, "a") is None


# -- batch reads ---------------------------------------------------------------------------------


def _each_get(records: RecordStore, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Item]:
    """What get_many must return: `get` of every key that has an item."""
    return {k: item for k in keys if (item := records.get(*k)) is not None}


def test_get_many_returns_what_get_returns_for_each_key(records: RecordStore) -> None:
    # Given items in two partitions, one of them deleted and one rewritten
    records.transact([Put(Item(PK, f"doc#{i}", {"i": i})) for i in range(5)])
    records.put(Item("docid#a", "doc", {"path": "p"}))
    records.delete(PK, "doc#1")
    records.put(Item(PK, "doc#2", {"i": 22}))
    keys = [(PK, f"doc#{i}") for i in range(6)] + [("docid#a", "doc"), ("docid#b", "doc")]
    # When they are read in one call
    found = records.get_many(keys)
    # Then present keys map to the same items as get; missing and deleted ones are absent
    assert found == _each_get(records, keys)
    assert set(found) == {(PK, "doc#0"), (PK, "doc#2"), (PK, "doc#3"), (PK, "doc#4"), ("docid#a", "doc")}
    assert found[(PK, "doc#2")] == Item(PK, "doc#2", {"i": 22}, 2)


def test_get_many_takes_duplicates_and_empty_input(records: RecordStore) -> None:
    records.put(Item(PK, "a", {"v": 1}))
    assert records.get_many([(PK, "a"), (PK, "nope"), (PK, "a"), (PK, "a")]) == {
        (PK, "a"): Item(PK, "a", {"v": 1}, 1)
    }
    assert records.get_many([]) == {}
    assert records.get_many([(PK, "nope"), (PK, "nope")]) == {}


def test_get_many_reads_after_a_large_transaction(records: RecordStore) -> None:
    # More ops than one DynamoDB transaction takes (the adapter stages them)
    records.transact([Put(Item(PK, f"old#{i:03d}", {"i": i})) for i in range(30)])
    ops: list[Put | Delete] = [Put(Item(PK, f"new#{i:03d}", {"i": i}), 0) for i in range(110)]
    ops += [Put(Item(PK, f"old#{i:03d}", {"i": -i}), 1) for i in range(15)]
    ops += [Delete(PK, f"old#{i:03d}") for i in range(15, 30)]
    records.transact(ops)
    keys = [(PK, f"new#{i:03d}") for i in range(0, 120, 3)] + [(PK, f"old#{i:03d}") for i in range(30)]
    found = records.get_many(keys)
    assert found == _each_get(records, keys)
    assert len(found) == 37 + 15
    assert found[(PK, "old#003")] == Item(PK, "old#003", {"i": -3}, 2)


def test_get_many_takes_up_to_the_bound_and_refuses_more(records: RecordStore) -> None:
    records.transact([Put(Item(PK, f"k#{i:04d}", {"i": i})) for i in range(0, MAX_GET_MANY, 7)])
    keys = [(PK, f"k#{i:04d}") for i in range(MAX_GET_MANY)]
    found = records.get_many(keys)
    assert sorted(found) == [(PK, f"k#{i:04d}") for i in range(0, MAX_GET_MANY, 7)]
    assert found[(PK, "k#0994")] == Item(PK, "k#0994", {"i": 994}, 1)
    with pytest.raises(InvalidInput, match=str(MAX_GET_MANY)):
        records.get_many([*keys, (PK, "one-more")])


@pytest.mark.parametrize(("pk", "sk"), [("", "k"), (PK, ""), (PK, "\ud800")])
def test_get_many_rejects_bad_keys(records: RecordStore, pk: str, sk: str) -> None:
    with pytest.raises(InvalidInput):
        records.get_many([(PK, "ok"), (pk, sk)])


def test_get_many_returns_fresh_copies(records: RecordStore) -> None:
    records.put(Item(PK, "k", {"list": [1]}))
    records.get_many([(PK, "k")])[(PK, "k")].data["list"].append(2)
    assert records.get_many([(PK, "k")]) == {(PK, "k"): Item(PK, "k", {"list": [1]}, 1)}


# -- queries -------------------------------------------------------------------------------------


def _sks(
    records: RecordStore, prefix: str = "", *, after: str | None = None, descending: bool = False
) -> list[str]:
    return [i.sk for i in records.query(PK, prefix, after=after, descending=descending).items]


def test_query_selects_by_prefix_within_the_partition(records: RecordStore) -> None:
    for sk in ["doc#2", "doc#1", "doc", "docs#1", "chunk#1", "doc#10"]:
        records.put(Item(PK, sk, {"sk": sk}))
    records.put(Item("other", "doc#3", {}))
    page = records.query(PK, "doc#")
    assert [i.sk for i in page.items] == ["doc#1", "doc#10", "doc#2"]
    assert page.items[0] == Item(PK, "doc#1", {"sk": "doc#1"}, 1)
    assert page.next_after is None
    assert _sks(records, "", descending=True) == ["docs#1", "doc#2", "doc#10", "doc#1", "doc", "chunk#1"]
    assert _sks(records, "doc#", after="doc#1") == ["doc#10", "doc#2"]
    assert _sks(records, "doc#", after="doc#10", descending=True) == ["doc#1"]
    assert records.query("empty").items == []


@pytest.mark.parametrize("descending", [False, True])
def test_query_pages_through_everything(records: RecordStore, descending: bool) -> None:
    sks = [f"item#{i:03d}" for i in range(23)]
    records.transact([Put(Item(PK, sk, {})) for sk in sks])
    seen: list[str] = []
    after: str | None = None
    for _ in range(10):
        page = records.query(PK, "item#", after=after, limit=5, descending=descending)
        seen += [i.sk for i in page.items]
        if page.next_after is None:
            break
        assert page.next_after == page.items[-1].sk
        after = page.next_after
    assert seen == sorted(sks, reverse=descending)
    # A page that ends exactly at the last item has nothing after it.
    assert records.query(PK, "item#", limit=23).next_after is None
    with pytest.raises(InvalidInput):
        records.query(PK, limit=0)


def test_query_resumes_after_keys_that_are_not_stored(records: RecordStore) -> None:
    # Listings resume after a position, not after an item: a cursor's item may be gone, and
    # a caller passes over a whole range of keys (a directory) by resuming past its last key.
    sks = ["doc#a.md", "doc#b/1", "doc#b/2", "doc#b/3/x", "doc#b0", "doc#c"]
    records.transact([Put(Item(PK, sk, {})) for sk in sks])
    records.put(Item(PK, "other", {}))
    assert _sks(records, "doc#", after="doc#a.mdz") == sks[1:]
    assert _sks(records, "doc#", after="doc#b/2a") == ["doc#b/3/x", "doc#b0", "doc#c"]
    top = "\U0010ffff"
    assert _sks(records, "doc#", after="doc#b/" + top) == ["doc#b0", "doc#c"]
    assert _sks(records, "doc#", after="doc#b/" + top, descending=True) == sks[3::-1]
    assert _sks(records, "doc#", after="doc#zz") == []
    assert _sks(records, "doc#", after="doc#zz", descending=True) == sks[::-1]


def test_query_takes_an_after_as_long_as_a_sort_key(records: RecordStore) -> None:
    # The largest position below every key under a prefix: the prefix padded with U+10FFFF up
    # to the sort-key bound (what DocumentRepository.past builds to skip a directory).
    prefix = "doc#b/"
    padded = prefix + "\U0010ffff" * ((MAX_SK_BYTES - len(prefix)) // 4)
    assert MAX_SK_BYTES - 4 < len(padded.encode()) <= MAX_SK_BYTES
    longest = prefix + "z" * (MAX_SK_BYTES - len(prefix))
    records.transact([Put(Item(PK, sk, {})) for sk in ["doc#a", "doc#b/1", longest, "doc#b0"]])
    assert _sks(records, "doc#", after=padded) == ["doc#b0"]
    page = records.query(PK, "doc#", after=padded, limit=1)
    assert [i.sk for i in page.items] == ["doc#b0"] and page.next_after is None
    assert _sks(records, "doc#", after=longest) == ["doc#b0"]
    with pytest.raises(InvalidInput):
        records.query(PK, "doc#", after=padded + "\U0010ffff")


def test_query_pages_one_item_at_a_time_within_a_prefix(records: RecordStore) -> None:
    inside = [f"doc#p/{i:02d}" for i in range(7)]
    records.transact([Put(Item(PK, sk, {})) for sk in ["doc#o", *inside, "doc#q"]])
    seen: list[str] = []
    after: str | None = None
    while True:
        page = records.query(PK, "doc#p/", after=after, limit=1)
        seen += [i.sk for i in page.items]
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == inside


def test_query_orders_bytewise_on_utf8(records: RecordStore) -> None:
    # UTF-16 order would put the emoji (surrogates) before U+FB01; UTF-8 bytes put it after.
    sks = ["a", "B", "Z", "é", "ab", "\ufb01", "\U0001f600", "\U0010ffff", "a\x7f", "a\u0080"]
    for sk in sks:
        records.put(Item(PK, sk, {}))
    assert _sks(records) == sorted(sks, key=lambda s: s.encode("utf-8"))
    assert _sks(records, descending=True) == sorted(sks, key=lambda s: s.encode("utf-8"), reverse=True)


def test_query_prefix_bounds_at_the_top_of_unicode(records: RecordStore) -> None:
    top = "\U0010ffff"
    sks = [
        "a",
        f"a{top}",
        f"a{top}z",
        f"a{top}{top}",
        f"a{top}{top}x",
        "b",
        top,
        top + top,
        "\ud7ffx",
        "\ue000",
    ]
    for sk in sks:
        records.put(Item(PK, sk, {}))
    assert _sks(records, f"a{top}") == [f"a{top}", f"a{top}z", f"a{top}{top}", f"a{top}{top}x"]
    assert _sks(records, "a") == [s for s in sorted(sks) if s.startswith("a")]
    assert _sks(records, top) == [top, top + top]
    assert _sks(records, "\ud7ff") == ["\ud7ffx"]
    assert _sks(records, "") == sorted(sks)


# -- scans ---------------------------------------------------------------------------------------


def _scan_all(records: RecordStore, prefixes: list[str], limit: int = 1000) -> list[Item]:
    """Every page of a scan, in the order returned; fails on an oversized or endless scan."""
    items: list[Item] = []
    cursor: str | None = None
    for _ in range(1000):
        page = records.scan(prefixes, cursor=cursor, limit=limit)
        assert len(page.items) <= limit
        items += page.items
        if page.cursor is None:
            return items
        cursor = page.cursor
    raise AssertionError("the scan never ended")


def _by_key(items: list[Item]) -> list[Item]:
    return sorted(items, key=lambda i: (i.pk, i.sk))


def test_scan_returns_exactly_the_items_of_matching_partitions(records: RecordStore) -> None:
    wanted = [("links#b1#doc1", "a"), ("links#b1#doc1", "b"), ("links#b1#doc2", "a"), ("docs#b1", "x")]
    unwanted = [("links#b10#doc1", "a"), ("links#b", "a"), ("links#b2#doc1", "a"), ("docs#b2", "x")]
    unwanted += [("docs#b", "x"), ("links#", "a"), ("other", "links#b1#doc1")]
    records.transact([Put(Item(pk, sk, {"k": [pk, sk]})) for pk, sk in wanted + unwanted])
    records.put(Item("links#b1#doc2", "a", {"k": "again"}))
    expected = [records.get(pk, sk) for pk, sk in wanted]
    assert [i.version for i in expected if i] == [1, 1, 2, 1]
    assert _by_key(_scan_all(records, ["links#b1#", "docs#b1"])) == _by_key([i for i in expected if i])
    assert _by_key(_scan_all(records, ["docs#b1"])) == [Item("docs#b1", "x", {"k": ["docs#b1", "x"]}, 1)]
    assert _scan_all(records, ["nothing#"]) == []


@pytest.mark.parametrize("limit", [1, 2, 3, 7])
def test_scan_pages_lose_and_repeat_nothing(records: RecordStore, limit: int) -> None:
    keys = [(f"p#{b}#{d}", f"s{i}") for b in range(3) for d in range(3) for i in range(3)]
    records.transact([Put(Item(pk, sk, {})) for pk, sk in [*keys, ("q#0#0", "s0"), ("p#", "s0")]])
    seen = [(i.pk, i.sk) for i in _scan_all(records, ["p#0#", "p#2#", "p#1#1"], limit)]
    assert len(seen) == len(set(seen))
    assert sorted(seen) == sorted(k for k in keys if not k[0].startswith(("p#1#0", "p#1#2")))


def test_scan_visits_each_item_once_when_prefixes_overlap(records: RecordStore) -> None:
    keys = [("a#", "1"), ("a#b", "1"), ("a#b#c", "1"), ("a#b#c", "2"), ("a#c", "1"), ("b", "1")]
    records.transact([Put(Item(pk, sk, {})) for pk, sk in keys])
    for limit in (1, 2, 1000):
        seen = [(i.pk, i.sk) for i in _scan_all(records, ["a#b", "a#", "a#b#c", "a#b"], limit)]
        assert sorted(seen) == keys[:5]


def test_scan_returns_every_item_that_outlives_it_exactly_once(records: RecordStore) -> None:
    # Deletes and puts between pages: a deleted item (even the page's last, the cursor's own)
    # may or may not come back, a new one may or may not, and every survivor comes back once.
    keys = [(f"s#{p}", f"{i:02d}") for p in range(4) for i in range(5)]
    records.transact([Put(Item(pk, sk, {})) for pk, sk in keys])
    deleted: set[tuple[str, str]] = set()
    added: set[tuple[str, str]] = set()
    seen: list[tuple[str, str]] = []
    page = records.scan(["s#"], limit=3)
    while True:
        seen += [(i.pk, i.sk) for i in page.items]
        if page.cursor is None:
            break
        if page.items:
            last = (page.items[-1].pk, page.items[-1].sk)
            records.delete(*last)
            deleted.add(last)
        for key in keys:
            if key not in deleted and key not in seen:
                records.delete(*key)
                deleted.add(key)
                break
        added.add(("s#new", f"{len(seen):02d}"))
        records.put(Item("s#new", f"{len(seen):02d}", {}))
        page = records.scan(["s#"], cursor=page.cursor, limit=3)
    assert len(seen) == len(set(seen))
    assert {k for k in keys if k not in deleted} <= set(seen)
    assert set(seen) <= set(keys) | added
    assert deleted and added


@pytest.mark.parametrize(
    "prefixes",
    [[], [""], ["ok#", ""], "links#", ["x" * (MAX_PK_BYTES + 1)], ["\ud800"], [None]],
    ids=["none", "empty", "one-empty", "a-string", "too-long", "not-unicode", "not-text"],
)
def test_scan_refuses_anything_but_prefixes(records: RecordStore, prefixes: list[str]) -> None:
    records.put(Item("links#b1", "a", {}))
    with pytest.raises(InvalidInput):
        records.scan(prefixes)


def test_scan_bounds_its_limit_and_prefixes(records: RecordStore) -> None:
    records.put(Item("p#1", "a", {}))
    assert records.scan(["p#"], limit=MAX_GET_MANY).items == [Item("p#1", "a", {}, 1)]
    assert len(records.scan([f"p#{i}" for i in range(MAX_SCAN_PREFIXES)]).items) == 1
    assert records.scan(["x" * MAX_PK_BYTES]).items == []
    for limit in (0, -1, MAX_GET_MANY + 1):
        with pytest.raises(InvalidInput):
            records.scan(["p#"], limit=limit)
    with pytest.raises(InvalidInput):
        records.scan([f"p#{i}" for i in range(MAX_SCAN_PREFIXES + 1)])


def test_scan_refuses_a_cursor_it_did_not_hand_out(records: RecordStore) -> None:
    records.transact([Put(Item(f"p#{i}", "a", {})) for i in range(3)])
    cursor = records.scan(["p#"], limit=1).cursor
    assert cursor is not None
    garbled = [
        "",
        "not a cursor!",
        cursor[:-4],
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        base64.urlsafe_b64encode(json.dumps(["p#1", "a"]).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps({"pk": "p#1", "sk": "a"}).encode()).decode(),
    ]
    for bad in garbled:
        with pytest.raises(InvalidInput):
            records.scan(["p#"], cursor=bad, limit=1)
    with pytest.raises(InvalidInput):  # a cursor of another scan
        records.scan(["p#1", "p#2"], cursor=cursor, limit=1)
    assert len(_scan_all(records, ["p#"], 1)) == 3


# -- concurrency ---------------------------------------------------------------------------------


def _contention(records: RecordStore) -> tuple[int, int]:
    """Writers and increments each: moto answers one request at a time at ~3 ms, so 16-way
    contention on DynamoDB under moto would take minutes; 6 writers still race on every write."""
    return (6, 10) if type(records).__name__ == "DynamoRecordStore" else (16, 50)


def test_threads_doing_optimistic_increments_lose_no_update(records: RecordStore) -> None:
    records.put(Item(PK, "counter", {"n": 0}))
    writers, each = _contention(records)

    def worker(_: int) -> None:
        for _ in range(each):
            _increment(records)

    _run_in_threads(writers, worker)
    total = writers * each
    assert records.get(PK, "counter") == Item(PK, "counter", {"n": total}, total + 1)


def test_async_tasks_doing_optimistic_increments_lose_no_update(records: RecordStore) -> None:
    records.put(Item(PK, "counter", {"n": 0}))
    writers, each = _contention(records)

    async def worker() -> None:
        for _ in range(each):
            await anyio.to_thread.run_sync(_increment, records)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(writers):
                tg.start_soon(worker)

    anyio.run(main)
    total = writers * each
    assert records.get(PK, "counter") == Item(PK, "counter", {"n": total}, total + 1)


def test_concurrent_unconditional_puts_never_tear(records: RecordStore) -> None:
    writers, rounds = 8, 25

    def write(i: int) -> None:
        for r in range(rounds):
            records.put(Item(PK, "shared", {"writer": i, "round": r, "payload": [i] * 2000}))

    def read(_: int) -> None:
        for _ in range(rounds * 2):
            item = records.get(PK, "shared")
            if item is not None:
                assert item.data["payload"] == [item.data["writer"]] * 2000

    _run_in_threads(writers * 2, lambda i: write(i) if i < writers else read(i))
    final = records.get(PK, "shared")
    assert final is not None
    assert final.version == writers * rounds
    assert final.data["payload"] == [final.data["writer"]] * 2000


# -- SQLite adapter specifics --------------------------------------------------------------------


def test_prefix_upper_bound() -> None:
    top = "\U0010ffff"
    assert prefix_upper_bound("") is None
    assert prefix_upper_bound(top + top) is None
    assert prefix_upper_bound("doc#") == "doc$"
    assert prefix_upper_bound(f"a{top}{top}") == "b"
    assert prefix_upper_bound("x\ud7ff") == "x\ue000"  # skips the surrogate block


def test_sqlite_persists_across_reopen_and_uses_wal(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "r.db")
    store.put(Item(PK, "k", {"v": 1}))
    store.close()
    with pytest.raises(RuntimeError):
        store.get(PK, "k")
    reopened = SqliteRecordStore(tmp_path / "r.db")
    assert reopened.get(PK, "k") == Item(PK, "k", {"v": 1}, 1)
    with sqlite3.connect(tmp_path / "r.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    reopened.close()


def test_sqlite_stores_sharing_one_file_lose_no_update(tmp_path: Path) -> None:
    # Two stores on one file stand in for two processes: separate connections, one lock.
    first, second = SqliteRecordStore(tmp_path / "r.db"), SqliteRecordStore(tmp_path / "r.db")
    first.put(Item(PK, "counter", {"n": 0}))

    def worker(i: int) -> None:
        for _ in range(25):
            _increment(first if i % 2 else second)

    _run_in_threads(16, worker)
    assert second.get(PK, "counter") == Item(PK, "counter", {"n": 400}, 401)
    first.close()
    second.close()


def test_sqlite_scrub_leaves_no_deleted_bytes_in_its_files(tmp_path: Path) -> None:
    # A small item lives in its leaf page (secure_delete zeroes it there); one over ~1 KB
    # spills to overflow pages, which a delete frees untouched; the WAL keeps older page images.
    store = SqliteRecordStore(tmp_path / "r.db")
    assert isinstance(store, ScrubbableRecords)
    assert not isinstance(MemoryRecordStore(), ScrubbableRecords)
    store.transact([Put(Item(f"keep#{i}", "k", {"text": "filler " * 40})) for i in range(40)])
    small, large = "ERASE-ME-small-7f3c", "ERASE-ME-large-9d2e"
    store.put(Item("person#1", "note", {"text": small}))
    store.put(Item("person#1", "page", {"text": large * 1000}))
    store.put(Item("person#1", "edited", {"text": large + " then " + small}))
    store.put(Item("person#1", "edited", {"text": "rewritten"}))

    def files() -> bytes:
        return b"".join(p.read_bytes() for p in (tmp_path / "r.db", tmp_path / "r.db-wal") if p.exists())

    assert small.encode() in files() and large.encode() in files()
    store.delete("person#1", "note")
    store.delete("person#1", "page")
    store.scrub()
    assert small.encode() not in files()
    assert large.encode() not in files()
    assert store.get("person#1", "edited") == Item("person#1", "edited", {"text": "rewritten"}, 2)
    assert len(_scan_all(store, ["keep#"])) == 40
    store.close()


def test_dynamodb_scan_leaves_out_its_transaction_records(request: pytest.FixtureRequest) -> None:
    with dynamodb_records(request) as store:
        store.put(Item("#mine", "a", {}))
        store.client.put_item(TableName=store.table, Item={"pk": {"S": "#txns"}, "sk": {"S": "t1"}})
        assert store.scan(["#"]).items == [Item("#mine", "a", {}, 1)]
        with pytest.raises(InvalidInput):
            store.scan(["#tx"])
