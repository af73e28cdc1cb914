"""The shims tests/contract/aws_storage.py lays over moto answer what moto answers: a Query
read from its partition alone returns the same items, pages and last keys as moto's own, which
sorts the whole table. Guards against a moto upgrade that changes what the shim relies on."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.contract.aws_storage import REGION, create_table, fake_credentials, serialized_moto

TABLE = "shim-check"
PARTITIONS = ["a", "b", "brains-of#x", "c", "doc#1", "doc#10", "doc#2"]


def _queries() -> Iterator[dict[str, Any]]:
    for pk in [*PARTITIONS, "missing"]:
        yield {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": pk}}}
        for limit in (1, 3, 7):
            for forward in (True, False):
                yield {
                    "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
                    "ExpressionAttributeValues": {":p": {"S": pk}, ":s": {"S": "item#1"}},
                    "Limit": limit,
                    "ScanIndexForward": forward,
                }
        yield {
            "KeyConditionExpression": "pk = :p AND sk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {":p": {"S": pk}, ":lo": {"S": "item#05"}, ":hi": {"S": "item#3"}},
            "Limit": 4,
        }
        yield {
            "KeyConditionExpression": "pk = :p AND sk > :s",
            "ExpressionAttributeValues": {":p": {"S": pk}, ":s": {"S": "item#2"}},
            "FilterExpression": "attribute_exists(n)",
            "ProjectionExpression": "pk, sk",
            "Limit": 5,
        }


@contextmanager
def _table(shimmed: bool) -> Iterator[Any]:
    """A client of moto's DynamoDB, with the shims or without, and the table made."""
    with ExitStack() as stack:
        stack.enter_context(mock_aws())
        if shimmed:
            stack.enter_context(serialized_moto())
        client = boto3.client("dynamodb", region_name=REGION)
        create_table(client, TABLE)
        yield client


def _answers(shimmed: bool) -> list[list[Any]]:
    """Every page of every query, on a table filled the same way each time."""
    rng = random.Random(7)
    answers = []
    with _table(shimmed) as client:
        for pk in PARTITIONS:
            for n in rng.sample(range(60), 25):
                item = {"pk": {"S": pk}, "sk": {"S": f"item#{n}"}}
                if n % 3:
                    item["n"] = {"N": str(n)}
                client.put_item(TableName=TABLE, Item=item)
        for query in _queries():
            pages: list[Any] = []
            start: dict[str, Any] | None = None
            while True:
                extra = {"ExclusiveStartKey": start} if start else {}
                page = client.query(TableName=TABLE, **query, **extra)
                pages.append((page["Items"], page.get("LastEvaluatedKey"), page["Count"]))
                start = page.get("LastEvaluatedKey")
                if start is None or len(pages) > 100:
                    break
            answers.append(pages)
    return answers


def test_a_query_read_from_its_partition_answers_as_moto_does(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_credentials(monkeypatch)
    plain, shimmed = _answers(shimmed=False), _answers(shimmed=True)
    assert sum(len(page[0]) for pages in plain for page in pages) > 400  # the queries found items
    assert shimmed == plain


def test_tables_made_under_the_shims_are_encrypted_with_a_working_kms_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_credentials(monkeypatch)
    with mock_aws(), serialized_moto():
        client = boto3.client("dynamodb", region_name=REGION)
        kms = boto3.client("kms", region_name=REGION)
        arns = []
        for name in ("first", "second"):
            create_table(client, name)
            sse = client.describe_table(TableName=name)["Table"]["SSEDescription"]
            assert sse["Status"] == "ENABLED" and sse["SSEType"] == "KMS"
            arns.append(sse["KMSMasterKeyArn"])
            assert kms.describe_key(KeyId=sse["KMSMasterKeyArn"])["KeyMetadata"]["Enabled"]
        assert arns[0] == arns[1]  # one managed aws/dynamodb key per account, as on AWS


def _rewrites(shimmed: bool, size: int) -> list[str]:
    """Put an item of about `size` bytes, then rewrite its big attribute twice: what each answered."""
    outcomes = []
    with _table(shimmed) as client:
        key = {"pk": {"S": "p"}, "sk": {"S": "s"}}
        try:
            client.put_item(TableName=TABLE, Item={**key, "d": {"S": "a" * size}})
            outcomes.append("put")
        except client.exceptions.ClientError as exc:
            outcomes.append(exc.response["Error"]["Code"])
        for letter in "bc":
            try:
                client.update_item(
                    TableName=TABLE,
                    Key=key,
                    UpdateExpression="SET #d = :d",
                    ExpressionAttributeNames={"#d": "d"},
                    ExpressionAttributeValues={":d": {"S": letter * size}},
                )
                outcomes.append("rewritten")
            except client.exceptions.ClientError as exc:
                outcomes.append(exc.response["Error"]["Code"])
    return outcomes


def test_an_item_is_sized_as_it_will_be_after_the_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto counts an attribute's old value with its new one, refusing to rewrite a 250 KB item
    that DynamoDB rewrites; the shim counts the item as written, and still refuses one past the
    limit. If a moto upgrade fixes its count, the first assertion says the shim can go."""
    fake_credentials(monkeypatch)
    assert _rewrites(False, 250_000) == ["put", "ValidationException", "ValidationException"]
    assert _rewrites(True, 250_000) == ["put", "rewritten", "rewritten"]
    assert _rewrites(True, 420_000) == ["ValidationException", "ValidationException", "ValidationException"]


def _transactions(shimmed: bool) -> list[Any]:
    """The table's items after each of three TransactWriteItems: one cancelled by its last
    condition after a put, an update and a delete (all undone), one cancelled by naming an item
    twice, and one that succeeds."""
    writes: list[dict[str, Any]] = [
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "a"}, "sk": {"S": "new"}, "n": {"N": "1"}}}},
        {
            "Update": {
                "TableName": TABLE,
                "Key": {"pk": {"S": "a"}, "sk": {"S": "old"}},
                "UpdateExpression": "SET n = :n",
                "ExpressionAttributeValues": {":n": {"N": "9"}},
            }
        },
        {"Delete": {"TableName": TABLE, "Key": {"pk": {"S": "b"}, "sk": {"S": "gone"}}}},
    ]
    refused = {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": {"pk": {"S": "b"}, "sk": {"S": "kept"}},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }
    again = {"Delete": {"TableName": TABLE, "Key": {"pk": {"S": "a"}, "sk": {"S": "new"}}}}
    states = []
    with _table(shimmed) as client:
        for pk, sk in (("a", "old"), ("b", "gone"), ("b", "kept")):
            client.put_item(TableName=TABLE, Item={"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": "0"}})
        for items in ([*writes, refused], [*writes, again], writes):
            try:
                client.transact_write_items(TransactItems=items)
                outcome = "written"
            except client.exceptions.ClientError as exc:
                outcome = exc.response["Error"]["Code"]
            scanned = client.scan(TableName=TABLE)["Items"]
            states.append((outcome, sorted(scanned, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))))
    return states


def test_a_cancelled_transaction_leaves_the_table_as_moto_leaves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shim undoes a cancelled TransactWriteItems item by item, not from a copy of the table."""
    fake_credentials(monkeypatch)
    plain, shimmed = _transactions(shimmed=False), _transactions(shimmed=True)
    first = [
        {"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": "0"}}
        for pk, sk in (("a", "old"), ("b", "gone"), ("b", "kept"))
    ]
    assert [outcome for outcome, _ in plain] == [
        "TransactionCanceledException",
        "ValidationException",
        "written",
    ]
    assert plain[0][1] == plain[1][1] == first
    assert len(plain[2][1]) == 3 and plain[2][1] != first
    assert shimmed == plain
