"""DynamoRecordStore specifics under moto: layout, pagination, conditional writes, limits, errors.

The port's behaviour is the contract suite's job (tests/contract); these pin what only the
DynamoDB adapter does. Staged transactions (above 100 ops) are in test_dynamodb_staged.py.
"""

from __future__ import annotations

import json
import random
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

from cairn.adapters.aws.dynamodb_codec import MAX_ITEM_BYTES
from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.domain.errors import CairnError, Conflict, InvalidInput, PayloadTooLarge, Unavailable
from cairn.ports.records import Delete, Item, Put
from tests.contract.aws_storage import DYNAMODB_CONFIG, REGION, TABLE, dynamodb_records, fake_credentials
from tests.fakes.records import MemoryRecordStore
from tests.unit.aws.dynamodb_support import PK, calls, raw, store

__all__ = ["calls", "store"]  # fixtures


# -- layout --------------------------------------------------------------------------------------


def test_item_layout_is_compact_json_and_a_version(store: DynamoRecordStore) -> None:
    store.put(Item(PK, "doc#a", {"title": "été", "n": 1.5}))
    assert raw(store, PK, "doc#a") == {
        "pk": {"S": PK},
        "sk": {"S": "doc#a"},
        "v": {"N": "1"},
        "d": {"S": '{"title":"été","n":1.5}'},
    }


def test_numeric_expires_at_becomes_the_ttl_attribute_and_follows_rewrites(store: DynamoRecordStore) -> None:
    store.put(Item(PK, "token", {"expires_at": 1_900_000_000.7}))
    assert (raw(store, PK, "token") or {})["expires_at"] == {"N": "1900000000"}
    store.put(Item(PK, "token", {"expires_at": "2030-01-01"}))  # not an epoch: no TTL
    assert "expires_at" not in (raw(store, PK, "token") or {})
    store.transact([Put(Item(PK, "token", {"expires_at": 1_800_000_000}), 2)])
    assert (raw(store, PK, "token") or {})["expires_at"] == {"N": "1800000000"}
    store.put(Item(PK, "flag", {"expires_at": True}))
    assert "expires_at" not in (raw(store, PK, "flag") or {})


def test_a_transaction_puts_each_item_whole_at_its_known_version(store: DynamoRecordStore) -> None:
    """In TransactWriteItems a put's version is known (pinned when it had none), so each is a Put
    of the whole item at that version plus one, leaving the item an Update left (the TTL set or
    gone); under moto a Put has no update expression to validate, most of a memory write's time."""
    store.put(Item(PK, "a", {"n": 1, "expires_at": 1_900_000_000}))
    sent: list[list[str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append([next(iter(entry)) for entry in params["TransactItems"]])

    store.client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", record)
    written = store.transact(
        [Put(Item(PK, "a", {"n": 2}), 1), Put(Item(PK, "b", {"expires_at": 1_800_000_000})), Delete(PK, "c")]
    )
    assert sent == [["Put", "Put", "Delete"]]
    assert [(i.sk, i.version) for i in written] == [("a", 2), ("b", 1)]
    assert raw(store, PK, "a") == {"pk": {"S": PK}, "sk": {"S": "a"}, "v": {"N": "2"}, "d": {"S": '{"n":2}'}}
    assert raw(store, PK, "b") == {
        "pk": {"S": PK},
        "sk": {"S": "b"},
        "v": {"N": "1"},
        "d": {"S": '{"expires_at":1800000000}'},
        "expires_at": {"N": "1800000000"},
    }
    with pytest.raises(Conflict):  # its version condition, as before
        store.transact([Put(Item(PK, "a", {"n": 3}), 1)])


def test_reserved_partitions_are_refused(store: DynamoRecordStore) -> None:
    with pytest.raises(InvalidInput, match="reserved"):
        store.put(Item("#txns", "x", {}))
    with pytest.raises(InvalidInput):
        store.query("#tx#abc")
    with pytest.raises(InvalidInput):
        store.transact([Delete("#txns", "x")])


# -- queries -------------------------------------------------------------------------------------


def test_pages_through_many_pages_with_query_only(store: DynamoRecordStore, calls: list[str]) -> None:
    sks = [f"msg#{i:010d}" for i in range(110)]
    store.transact([Put(Item(PK, sk, {"i": i})) for i, sk in enumerate(sks)])
    for descending in (False, True):
        seen: list[str] = []
        after: str | None = None
        while True:
            page = store.query(PK, "msg#", after=after, limit=13, descending=descending)
            seen += [i.sk for i in page.items]
            if page.next_after is None:
                break
            after = page.next_after
        assert seen == sorted(sks, reverse=descending)
    assert "Scan" not in calls


def test_query_follows_dynamodb_pages_cut_at_one_megabyte(store: DynamoRecordStore) -> None:
    # Each item is ~300 KB, so DynamoDB returns at most three per response.
    blob = "x" * 300_000
    for i in range(8):
        store.put(Item(PK, f"big#{i}", {"blob": blob}))
    assert [i.sk for i in store.query(PK, "big#").items] == [f"big#{i}" for i in range(8)]
    page = store.query(PK, "big#", limit=5, descending=True)
    assert [i.sk for i in page.items] == [f"big#{i}" for i in range(7, 2, -1)]
    assert page.next_after == "big#3"


def test_query_agrees_with_the_reference_store_on_cursors_and_prefixes(store: DynamoRecordStore) -> None:
    # Cursors inside, below and above the prefix's range, empty ones, every direction and limit.
    reference = MemoryRecordStore()
    sks = ["a", "a#", "a#1", "a#2", "a#2x", "b", "b#1", "c", "\U0010ffff", "é#1"]
    for sk in sks:
        for target in (store, reference):
            target.put(Item(PK, sk, {}))
    rng = random.Random(4)
    cursors = [None, "", "a", "a#1", "a#15", "a#3", "b", "zz", "\U0010ffff\U0010ffff"]
    for _ in range(150):
        prefix = rng.choice(["", "a", "a#", "a#2", "b", "c#", "é"])
        args: dict[str, Any] = {
            "after": rng.choice(cursors),
            "limit": rng.choice([None, 1, 2, 50]),
            "descending": rng.random() < 0.5,
        }
        assert store.query(PK, prefix, **args) == reference.query(PK, prefix, **args), (prefix, args)


# -- conditional writes --------------------------------------------------------------------------


def test_conflicts_name_the_key_and_both_versions(store: DynamoRecordStore) -> None:
    store.put(Item(PK, "k", {}))
    store.put(Item(PK, "k", {}))
    with pytest.raises(Conflict, match=r"'brain#1'/'k': expected version 1, found version 2"):
        store.put(Item(PK, "k", {}), expected_version=1)
    with pytest.raises(Conflict, match="expected version 3, found no item"):
        store.delete(PK, "gone", expected_version=3)
    with pytest.raises(Conflict, match="expected version 0, found version 2"):
        store.transact([Put(Item(PK, "new", {})), Put(Item(PK, "k", {}), 0)])
    assert store.get(PK, "new") is None


def test_a_transaction_conflicting_with_another_is_retried(request: pytest.FixtureRequest) -> None:
    fake_credentials(request.getfixturevalue("monkeypatch"))
    client = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
    store = DynamoRecordStore(client, TABLE, sleep=lambda _: None)
    with Stubber(client) as stub:
        stub.add_client_error("update_item", "TransactionConflictException", "in a transaction")
        stub.add_response("update_item", {})
        assert store.put(Item(PK, "k", {"a": 1}), expected_version=4) == Item(PK, "k", {"a": 1}, 5)
        stub.assert_no_pending_responses()


# -- limits and errors ---------------------------------------------------------------------------


def test_items_above_400_kb_are_refused_before_anything_is_written(store: DynamoRecordStore) -> None:
    near = "z" * (MAX_ITEM_BYTES - 1024)
    assert store.put(Item(PK, "near", {"s": near})).version == 1
    assert store.get(PK, "near") == Item(PK, "near", {"s": near}, 1)
    with pytest.raises(PayloadTooLarge, match=r"more than a DynamoDB item holds \(400000 bytes\)") as refused:
        store.put(Item(PK, "huge", {"s": "z" * MAX_ITEM_BYTES}))
    assert "brain#1" not in refused.value.message and "huge" not in refused.value.message  # keys name brains
    with pytest.raises(PayloadTooLarge):
        store.transact([Put(Item(PK, "ok", {})), Put(Item(PK, "huge", {"s": "é" * 210_000}))])
    assert store.get(PK, "ok") is None
    assert store.get(PK, "huge") is None


def test_service_errors_carry_the_code_but_no_account_details(request: pytest.FixtureRequest) -> None:
    fake_credentials(request.getfixturevalue("monkeypatch"))
    client = boto3.client("dynamodb", region_name=REGION, config=DYNAMODB_CONFIG)
    store = DynamoRecordStore(client, TABLE)
    secret = "User: arn:aws:sts::123456789012:assumed-role/cairn-api/session is not authorized"
    with Stubber(client) as stub:
        stub.add_client_error("get_item", "AccessDeniedException", secret, http_status_code=400)
        with pytest.raises(CairnError) as caught:
            store.get(PK, "k")
    assert caught.value.message == "DynamoDB GetItem failed (AccessDeniedException)"
    assert "123456789012" not in str(caught.value)


def test_a_missing_table_is_a_clear_error(request: pytest.FixtureRequest) -> None:
    with dynamodb_records(request) as base:
        store = DynamoRecordStore(base.client, "no-such-table")
        with pytest.raises(CairnError, match=r"^DynamoDB Query failed \(ResourceNotFoundException\)$"):
            store.query(PK)


def test_returned_items_are_fresh_copies_of_the_stored_json(store: DynamoRecordStore) -> None:
    data = {"nested": {"list": [1, 2.5, None, "x"]}}
    written = store.transact([Put(Item(PK, "a", data)), Put(Item(PK, "b", data), 0)])
    written[0].data["nested"]["list"].append(3)
    got = store.get(PK, "a")
    assert got is not None and got.data == data
    assert json.loads((raw(store, PK, "b") or {})["d"]["S"]) == data


def test_a_transaction_the_table_keeps_throttling_is_unavailable_not_a_conflict(
    store: DynamoRecordStore,
) -> None:
    """Cancelled for throttling (a reason ThrottlingError) past the adapter's retries: nothing
    conflicted, so the caller is told to try again later (503 over REST), and nothing is written."""
    tries: list[str] = []

    def throttled(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if model.name != "TransactWriteItems":
            return None
        tries.append(model.name)
        error = {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": [{"Code": "ThrottlingError"}, {"Code": "None"}],
        }
        return AWSResponse("https://dynamodb.us-east-1.amazonaws.com", 400, {}, None), error

    store.client.meta.events.register("before-call.dynamodb.TransactWriteItems", throttled)
    store._sleep = lambda _: None
    with pytest.raises(Unavailable, match="kept throttling") as refused:
        store.transact([Put(Item(PK, "a", {})), Put(Item(PK, "b", {}))])
    assert refused.value.retry_after_s and len(tries) > 1
    assert store.get(PK, "a") is None and store.get(PK, "b") is None
