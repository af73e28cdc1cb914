"""DynamoRecordStore transactions above TransactWriteItems' limits: staged, all or nothing.

Success, conflicts, crashes before and after the commit point, writers meeting live locks.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.stub import Stubber

from cairn.adapters.aws import dynamodb_writes as writes
from cairn.adapters.aws.dynamodb_codec import Op
from cairn.adapters.aws.dynamodb_locks import Locks
from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.dynamodb_staged import StagedTransaction
from cairn.domain.errors import CairnError, Conflict
from cairn.ports.records import Delete, Item, Put
from tests.contract.aws_storage import DYNAMODB_CONFIG, REGION, TABLE, dynamodb_records, fake_credentials
from tests.unit.aws.dynamodb_support import PK, Crash, calls, no_staging_left, raw, store

__all__ = ["calls", "store"]  # fixtures


def test_settling_a_lock_retries_while_its_owner_applies_the_item(request: pytest.FixtureRequest) -> None:
    fake_credentials(request.getfixturevalue("monkeypatch"))
    client = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
    locks = Locks(client, TABLE, lease_s=60, now=time.time)
    request_ = writes.apply(TABLE, Op(PK, "k", None, "{}"), "tx1")
    with Stubber(client) as stub:
        stub.add_client_error("update_item", "TransactionConflictException", "in a transaction")
        stub.add_response("update_item", {})
        stub.add_client_error("update_item", "ConditionalCheckFailedException", "already applied")
        assert locks.finish(request_) is True
        assert locks.finish(request_) is False
        stub.assert_no_pending_responses()


# -- transactions above TransactWriteItems' limits -----------------------------------------------


def test_more_than_100_ops_commit_atomically_in_stages(store: DynamoRecordStore, calls: list[str]) -> None:
    store.transact([Put(Item(PK, f"old#{i:03d}", {"i": i})) for i in range(40)])
    ops: list[Put | Delete] = [Put(Item(PK, f"new#{i:03d}", {"i": i}), 0) for i in range(120)]
    ops += [Put(Item(PK, f"old#{i:03d}", {"i": -i}), 1) for i in range(20)]
    ops += [Delete(PK, f"old#{i:03d}") for i in range(20, 40)]
    ops.append(Put(Item("docid#x", "doc", {"path": "p"})))
    calls.clear()
    written = store.transact(ops)
    assert written[0] == Item(PK, "new#000", {"i": 0}, 1)
    assert written[120] == Item(PK, "old#000", {"i": 0}, 2)
    assert written[-1] == Item("docid#x", "doc", {"path": "p"}, 1)
    assert len(written) == 141
    assert len(store.query(PK, "new#").items) == 120
    assert [i.sk for i in store.query(PK, "old#").items] == [f"old#{i:03d}" for i in range(20)]
    assert calls.count("TransactWriteItems") >= 4  # two to lock, two to apply
    assert no_staging_left(store) and no_staging_left(store, "docid#x")


def test_a_failed_condition_in_a_large_transaction_writes_nothing(store: DynamoRecordStore) -> None:
    store.put(Item(PK, "zzz", {"v": 1}))
    store.put(Item(PK, "aaa", {"v": 1}))
    ops: list[Put | Delete] = [Put(Item(PK, f"new#{i:03d}", {}), 0) for i in range(110)]
    ops += [Put(Item(PK, "aaa", {"v": 2}), 1), Put(Item(PK, "zzz", {"v": 2}), 5)]  # zzz locks last
    with pytest.raises(Conflict, match="'zzz': expected version 5, found version 1"):
        store.transact(ops)
    assert store.query(PK).items == [Item(PK, "aaa", {"v": 1}, 1), Item(PK, "zzz", {"v": 1}, 1)]
    assert no_staging_left(store)  # placeholders and locks undone, records removed


def test_ops_over_four_megabytes_stage_even_when_few(store: DynamoRecordStore, calls: list[str]) -> None:
    blob = "y" * 350_000
    written = store.transact([Put(Item(PK, f"big#{i}", {"b": blob})) for i in range(14)])
    assert [i.version for i in written] == [1] * 14
    assert calls.count("TransactWriteItems") >= 2
    assert len(store.query(PK, "big#").items) == 14
    assert no_staging_left(store)


def _crash_after_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(self: StagedTransaction) -> None:
        raise Crash("the function died after the commit point")

    monkeypatch.setattr(StagedTransaction, "apply_all", crash)


def test_a_crash_after_commit_is_visible_and_finished_by_the_next_writer(
    store: DynamoRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [time.time()]
    store = DynamoRecordStore(store.client, TABLE, lease_s=60, now=lambda: clock[0])
    store.put(Item(PK, "keep", {"v": 1}))
    store.put(Item(PK, "drop", {}))
    ops: list[Put | Delete] = [Put(Item(PK, f"n#{i:03d}", {"i": i})) for i in range(105)]
    ops += [Put(Item(PK, "keep", {"v": 2}), 1), Delete(PK, "drop")]
    with monkeypatch.context() as patch:
        _crash_after_commit(patch)
        with pytest.raises(Crash):
            store.transact(ops)
    # Readers already see the committed transaction through its locks.
    assert store.get(PK, "keep") == Item(PK, "keep", {"v": 2}, 2)
    assert store.get(PK, "drop") is None
    assert len(store.query(PK, "n#").items) == 105
    assert "tx" in (raw(store, PK, "keep") or {})
    # A writer rolls the item forward first, so its expected version is the committed one.
    assert store.put(Item(PK, "keep", {"v": 3}), expected_version=2).version == 3
    assert store.recover() == 0  # within its lease: its owner may still be finishing
    clock[0] += 61
    assert store.recover() == 1
    assert no_staging_left(store)
    assert store.get(PK, "n#007") == Item(PK, "n#007", {"i": 7}, 1)


def test_a_crash_before_commit_blocks_writers_only_until_its_lease(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1_000_000.0]
    with dynamodb_records(request) as base:
        store = DynamoRecordStore(base.client, TABLE, lease_s=60, lock_wait_s=0.05, now=lambda: clock[0])
        store.put(Item(PK, "k", {"v": 1}))

        def crash(self: StagedTransaction) -> bool:
            raise Crash("the function died before the commit point")

        with monkeypatch.context() as patch:
            patch.setattr(StagedTransaction, "commit", crash)
            patch.setattr(StagedTransaction, "abandon", lambda self: None)  # died: no cleanup
            with pytest.raises(Crash):
                store.transact([Put(Item(PK, f"n#{i:03d}", {})) for i in range(101)] + [Delete(PK, "k")])
        assert store.get(PK, "k") == Item(PK, "k", {"v": 1}, 1)  # uncommitted: invisible
        assert store.query(PK, "n#").items == []
        with pytest.raises(Conflict, match="locked by another transaction"):
            store.put(Item(PK, "k", {"v": 2}))
        assert store.recover() == 0  # still within its lease
        clock[0] += 61
        assert store.put(Item(PK, "k", {"v": 2}), expected_version=1).version == 2  # aborts it
        assert store.recover() == 1
        assert no_staging_left(store)
        assert store.query(PK).items == [Item(PK, "k", {"v": 2}, 2)]


def test_single_writers_and_large_transactions_lose_no_update(store: DynamoRecordStore) -> None:
    # A large transaction increments 101 counters while two threads increment single ones;
    # whoever loses a race re-reads and retries.
    keys = [f"c#{i:03d}" for i in range(101)]
    store.transact([Put(Item(PK, k, {"n": 0})) for k in keys])
    singles = [[keys[(7 * t + 13 * j) % len(keys)] for j in range(15)] for t in range(2)]

    def increment_all() -> None:
        for _ in range(1):
            for _attempt in range(50):
                current = store.query(PK, "c#").items
                try:
                    store.transact([Put(Item(PK, i.sk, {"n": i.data["n"] + 1}), i.version) for i in current])
                    break
                except Conflict:
                    continue
            else:
                raise AssertionError("the large transaction never won")

    def increment_some(targets: list[str]) -> None:
        for k in targets:
            while True:
                item = store.get(PK, k)
                assert item is not None
                try:
                    store.put(Item(PK, k, {"n": item.data["n"] + 1}), item.version)
                    break
                except Conflict:
                    continue

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(increment_all)] + [pool.submit(increment_some, t) for t in singles]
        for future in futures:
            future.result()
    final = {i.sk: i for i in store.query(PK, "c#").items}
    for k in keys:
        expected = 1 + sum(t.count(k) for t in singles)
        assert final[k].data["n"] == expected
        assert final[k].version == expected + 1
    assert no_staging_left(store)


def test_a_writer_waits_for_a_live_transaction_then_writes_after_it(
    store: DynamoRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put(Item(PK, "k", {"by": "first"}))
    locked, waiting = threading.Event(), threading.Event()
    commit = StagedTransaction.commit

    def slow_commit(self: StagedTransaction) -> bool:
        locked.set()
        assert waiting.wait(10)  # the writer found the lock and is backing off
        return commit(self)

    def sleep(seconds: float) -> None:
        waiting.set()
        time.sleep(seconds)

    monkeypatch.setattr(StagedTransaction, "commit", slow_commit)
    writer = DynamoRecordStore(store.client, TABLE, sleep=sleep)
    ops: list[Put | Delete] = [Put(Item(PK, f"n#{i:03d}", {})) for i in range(100)]
    ops.append(Put(Item(PK, "k", {"by": "transaction"}), 1))
    with ThreadPoolExecutor(1) as pool:
        big = pool.submit(store.transact, ops)
        assert locked.wait(10)
        assert store.get(PK, "k") == Item(PK, "k", {"by": "first"}, 1)  # not committed yet
        written = writer.put(Item(PK, "k", {"by": "writer"}))
        assert big.result()[-1] == Item(PK, "k", {"by": "transaction"}, 2)
    assert written == Item(PK, "k", {"by": "writer"}, 3)
    assert store.get(PK, "k") == written


def test_a_failure_after_commit_still_reports_success(
    store: DynamoRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def throttled(self: StagedTransaction) -> None:
        raise CairnError("DynamoDB TransactWriteItems failed (ThrottlingException)")

    monkeypatch.setattr(StagedTransaction, "apply_all", throttled)
    written = store.transact([Put(Item(PK, f"n#{i:03d}", {"i": i})) for i in range(101)])
    assert written[5] == Item(PK, "n#005", {"i": 5}, 1)
    assert store.get(PK, "n#005") == written[5]  # through the lock: the commit decided
