"""Fixtures and helpers shared by the DynamoRecordStore tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from tests.contract.aws_storage import TABLE, dynamodb_records

PK = "brain#1"


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Iterator[DynamoRecordStore]:
    with dynamodb_records(request) as records:
        yield records


@pytest.fixture
def calls(store: DynamoRecordStore) -> list[str]:
    """Every DynamoDB operation the store's client sends, by name."""
    seen: list[str] = []

    def record(model: Any, **_: Any) -> None:
        seen.append(model.name)

    store.client.meta.events.register("before-call.dynamodb", record)
    return seen


def raw(store: DynamoRecordStore, pk: str, sk: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = store.client.get_item(
        TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}}
    ).get("Item")
    return item


def partition(store: DynamoRecordStore, pk: str) -> list[dict[str, Any]]:
    response = store.client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
    )
    items: list[dict[str, Any]] = response["Items"]
    return items


def no_staging_left(store: DynamoRecordStore, pk: str = PK) -> bool:
    locked = [i for i in partition(store, pk) if "tx" in i or "v" not in i]
    return not locked and not partition(store, "#txns")


class Crash(BaseException):
    """The function dies (timeout, out of memory): no handler runs."""
