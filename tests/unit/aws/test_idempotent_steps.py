"""Powertools idempotency on the step tasks (adapters/aws/sfn_idempotency.py), on a moto DynamoDB table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.sfn_idempotency import IDEMPOTENCY_PARTITION, idempotent_steps
from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
from cairn.adapters.aws.sfn_tasks import task_handler
from cairn.domain.errors import InvalidInput
from tests.contract.aws_storage import fake_credentials
from tests.events.apigw import LambdaContext

TABLE = "cairn-records"


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    fake_credentials(monkeypatch)
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield ddb


class CountingTask:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail_next = False

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.calls.append(event)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("the step failed")
        return {"ran": len(self.calls), "step": event.get("step")}


def step(attempt: int = 1, batch: int = 0) -> dict[str, Any]:
    item = {"batch": batch}
    return {"action": "step", "job_id": "job_1", "attempt": attempt, "step": "index", "item": item}


def test_a_repeated_step_returns_the_stored_result_without_running_again(client: Any) -> None:
    task = CountingTask()
    handler = idempotent_steps(task, TABLE, client)

    first = handler(step(), LambdaContext())
    again = handler(step(), LambdaContext())

    assert first == again == {"ran": 1, "step": "index"} and len(task.calls) == 1
    items = client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": IDEMPOTENCY_PARTITION}},
    )["Items"]
    assert len(items) == 1 and items[0]["status"]["S"] == "COMPLETED" and "expires_at" in items[0]


def test_another_item_or_attempt_is_another_step(client: Any) -> None:
    task = CountingTask()
    handler = idempotent_steps(task, TABLE, client)

    handler(step(batch=0), LambdaContext())
    handler(step(batch=1), LambdaContext())
    handler(step(attempt=2, batch=0), LambdaContext())

    assert len(task.calls) == 3


def test_a_failed_step_leaves_no_record_so_its_retry_runs(client: Any) -> None:
    task = CountingTask()
    handler = idempotent_steps(task, TABLE, client)
    task.fail_next = True

    with pytest.raises(RuntimeError, match="the step failed"):
        handler(step(), LambdaContext())
    retried = handler(step(), LambdaContext())

    assert retried == {"ran": 2, "step": "index"} and len(task.calls) == 2


def test_other_actions_are_not_deduplicated(client: Any) -> None:
    task = CountingTask()
    handler = idempotent_steps(task, TABLE, client)
    begin = {"action": "begin", "job_id": "job_1"}

    handler(begin, LambdaContext())
    handler(begin, LambdaContext())

    assert len(task.calls) == 2


@pytest.mark.parametrize("event", [None, [], "step", 7])
def test_an_event_that_is_not_an_object_is_refused_as_invalid_task_input(client: Any, event: Any) -> None:
    handler = idempotent_steps(task_handler(cast(StepFunctionsJobRunner, None)), TABLE, client)

    with pytest.raises(InvalidInput, match="not a job task event"):
        handler(event, LambdaContext())
