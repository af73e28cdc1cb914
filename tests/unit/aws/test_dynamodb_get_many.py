"""DynamoRecordStore.get_many specifics: BatchGetItem requests, unprocessed keys, errors, locks.

What get_many returns is the contract suite's job (tests/contract); these pin how the DynamoDB
adapter reads: 100 distinct keys a consistent BatchGetItem, resending what DynamoDB left
unprocessed, and seeing through staged transactions exactly as `get` does.
"""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cairn.adapters.aws import dynamodb_batch
from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.dynamodb_staged import StagedTransaction
from cairn.domain.errors import CairnError, InvalidInput
from cairn.ports.records import Delete, Item, Put
from tests.contract.aws_storage import DYNAMODB_CONFIG, REGION, TABLE, fake_credentials
from tests.unit.aws.dynamodb_support import PK, Crash, calls, store

__all__ = ["calls", "store"]  # fixtures


def _stubbed(request: pytest.FixtureRequest, sleeps: list[float]) -> tuple[DynamoRecordStore, Any]:
    fake_credentials(request.getfixturevalue("monkeypatch"))
    client = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
    return DynamoRecordStore(client, TABLE, sleep=sleeps.append), client


def _key(sk: str) -> dict[str, Any]:
    return {"pk": {"S": PK}, "sk": {"S": sk}}


def _raw(sk: str, version: int = 1) -> dict[str, Any]:
    return {**_key(sk), "v": {"N": str(version)}, "d": {"S": json.dumps({"sk": sk})}}


def _reply(found: list[str], unprocessed: list[str]) -> dict[str, Any]:
    reply: dict[str, Any] = {"Responses": {TABLE: [_raw(sk) for sk in found]}}
    if unprocessed:
        reply["UnprocessedKeys"] = {TABLE: {"Keys": [_key(sk) for sk in unprocessed]}}
    return reply


def _asked(sks: list[str]) -> dict[str, Any]:
    return {"RequestItems": {TABLE: {"Keys": [_key(sk) for sk in sks], "ConsistentRead": True}}}


# -- requests ------------------------------------------------------------------------------------


def test_reads_100_distinct_keys_a_batch_and_never_one_by_one(
    store: DynamoRecordStore, calls: list[str]
) -> None:
    # Given 250 items, asked for with every key twice
    store.transact([Put(Item(PK, f"k#{i:03d}", {"i": i})) for i in range(250)])
    keys = [(PK, f"k#{i:03d}") for i in range(250)] * 2
    calls.clear()
    # When read in one call
    found = store.get_many(keys)
    # Then three consistent BatchGetItem requests and no GetItem
    assert len(found) == 250
    assert calls == ["BatchGetItem"] * 3


def test_requests_are_strongly_consistent(request: pytest.FixtureRequest) -> None:
    store, client = _stubbed(request, [])
    with Stubber(client) as stub:
        stub.add_response("batch_get_item", _reply(["a"], []), _asked(["a", "b"]))
        assert store.get_many([(PK, "a"), (PK, "b"), (PK, "a")]) == {(PK, "a"): Item(PK, "a", {"sk": "a"}, 1)}
        stub.assert_no_pending_responses()


def test_unprocessed_keys_are_resent_at_once_while_replies_make_progress(
    request: pytest.FixtureRequest,
) -> None:
    sleeps: list[float] = []
    store, client = _stubbed(request, sleeps)
    with Stubber(client) as stub:
        stub.add_response("batch_get_item", _reply(["a"], ["b", "c"]), _asked(["a", "b", "c"]))
        stub.add_response("batch_get_item", _reply(["b"], ["c"]), _asked(["b", "c"]))
        stub.add_response("batch_get_item", _reply([], []), _asked(["c"]))
        found = store.get_many([(PK, "a"), (PK, "b"), (PK, "c")])
        stub.assert_no_pending_responses()
    assert sorted(found) == [(PK, "a"), (PK, "b")]
    assert sleeps == []


def test_unprocessed_keys_back_off_when_a_reply_reads_nothing_then_give_up(
    request: pytest.FixtureRequest,
) -> None:
    sleeps: list[float] = []
    store, client = _stubbed(request, sleeps)
    with Stubber(client) as stub:
        # Throttled twice, then served
        stub.add_response("batch_get_item", _reply([], ["a"]), _asked(["a"]))
        stub.add_response("batch_get_item", _reply([], ["a"]), _asked(["a"]))
        stub.add_response("batch_get_item", _reply(["a"], []), _asked(["a"]))
        assert list(store.get_many([(PK, "a")])) == [(PK, "a")]
        assert len(sleeps) == 2 and 0 < sleeps[0] < sleeps[1] * 3  # growing, jittered
        # Throttled every time: a storage error once the empty replies run out
        for _ in range(dynamodb_batch.MAX_EMPTY_REPLIES + 1):
            stub.add_response("batch_get_item", _reply([], ["a"]), _asked(["a"]))
        with pytest.raises(CairnError, match=r"^DynamoDB BatchGetItem failed \(keys left unprocessed"):
            store.get_many([(PK, "a")])
        stub.assert_no_pending_responses()


def test_service_errors_carry_the_code_but_no_account_details(request: pytest.FixtureRequest) -> None:
    store, client = _stubbed(request, [])
    secret = "User: arn:aws:sts::123456789012:assumed-role/cairn-api/session is not authorized"
    with Stubber(client) as stub:
        stub.add_client_error("batch_get_item", "AccessDeniedException", secret, http_status_code=400)
        with pytest.raises(CairnError) as caught:
            store.get_many([(PK, "k")])
    assert caught.value.message == "DynamoDB BatchGetItem failed (AccessDeniedException)"
    assert "123456789012" not in str(caught.value)


def test_reserved_partitions_are_refused_before_any_request(
    store: DynamoRecordStore, calls: list[str]
) -> None:
    with pytest.raises(InvalidInput, match="reserved"):
        store.get_many([(PK, "k"), ("#txns", "anything")])
    assert calls == []


# -- staged transactions -------------------------------------------------------------------------


def test_sees_a_committed_but_unfinished_transaction_like_get(
    store: DynamoRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a large transaction whose writer died after the commit point (items still locked)
    store.put(Item(PK, "keep", {"v": 1}))
    store.put(Item(PK, "drop", {}))
    ops: list[Put | Delete] = [Put(Item(PK, f"n#{i:03d}", {"i": i})) for i in range(101)]
    ops += [Put(Item(PK, "keep", {"v": 2}), 1), Delete(PK, "drop")]

    def crash(self: StagedTransaction) -> None:
        raise Crash("the function died after the commit point")

    with monkeypatch.context() as patch:
        patch.setattr(StagedTransaction, "apply_all", crash)
        with pytest.raises(Crash):
            store.transact(ops)
    keys = [(PK, "keep"), (PK, "drop"), (PK, "n#000"), (PK, "n#100"), (PK, "never")]
    # When read in a batch / Then it shows the committed values, as get does
    found = store.get_many(keys)
    assert found == {k: item for k in keys if (item := store.get(*k)) is not None}
    assert found[(PK, "keep")] == Item(PK, "keep", {"v": 2}, 2)
    assert (PK, "drop") not in found


def test_hides_an_uncommitted_transaction_like_get(
    store: DynamoRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a large transaction that died before its commit point (locks and placeholders left)
    store = DynamoRecordStore(store.client, TABLE, lease_s=60, now=time.time)
    store.put(Item(PK, "k", {"v": 1}))

    def crash(self: StagedTransaction) -> bool:
        raise Crash("the function died before the commit point")

    with monkeypatch.context() as patch:
        patch.setattr(StagedTransaction, "commit", crash)
        patch.setattr(StagedTransaction, "abandon", lambda self: None)
        with pytest.raises(Crash):
            store.transact([Put(Item(PK, f"n#{i:03d}", {})) for i in range(101)] + [Delete(PK, "k")])
    # When read in a batch / Then only the old value shows; placeholders stay invisible
    assert store.get_many([(PK, "k"), (PK, "n#000"), (PK, "n#050")]) == {
        (PK, "k"): Item(PK, "k", {"v": 1}, 1)
    }
