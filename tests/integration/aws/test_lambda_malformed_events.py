"""Events the Lambda functions were never meant to get: the API function answers a 400 Problem+JSON
(and logs one line, never the event) instead of raising from inside Mangum; the job task function
refuses an event that is not an object as invalid task input."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest

from cairn.domain.errors import InvalidInput
from cairn.entrypoints.aws_lambda import Handler, JobTasks, api_handler, jobs_handler
from tests.events.apigw import LambdaContext, http_event, json_of
from tests.fakes.container import fake_container

SECRET = "cairn_key_not-for-the-logs"


@pytest.fixture
def api(tmp_path: Path) -> Handler:
    return api_handler(lambda: fake_container(tmp_path, backend="aws"))


def malformed(change: str) -> dict[str, Any]:
    event = copy.deepcopy(
        http_event("POST", "/v1/brains", body={"name": "x"}, headers={"authorization": f"Bearer {SECRET}"})
    )
    if change == "body not base64":
        event["body"], event["isBase64Encoded"] = "!!not base64!!", True
    elif change == "headers null":
        event["headers"] = None
    elif change == "a header null":
        event["headers"]["x-test"] = None
    elif change == "body an object":
        event["body"] = {"name": "x"}
    elif change == "no requestContext.http":
        del event["requestContext"]["http"]
    elif change == "payload 1.0":
        event["version"] = "1.0"
    elif change == "host port not a number":
        event["headers"]["host"] = "example.com:https"
    return event


def assert_refused(response: dict[str, Any], detail: str) -> None:
    assert response["statusCode"] == 400
    assert response["headers"]["content-type"] == "application/problem+json"
    problem = json_of(response)
    assert problem["status"] == 400 and problem["code"] == "validation_error"
    assert detail in problem["detail"]


def assert_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """One error naming the refusal, without the event's contents or a traceback."""
    logged = [r for r in caplog.records if r.name == "cairn.lambda"]
    assert [r.levelno for r in logged] == [logging.ERROR]
    assert "refused an API invocation" in logged[0].getMessage() and logged[0].exc_info is None
    assert SECRET not in caplog.text and "Traceback" not in caplog.text


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ("body not base64", "not base64"),
        ("headers null", "headers"),
        ("a header null", "headers.x-test"),
        ("body an object", "body"),
        ("no requestContext.http", "requestContext.http"),
        ("payload 1.0", "version"),
        ("host port not a number", "port"),
    ],
)
def test_a_malformed_http_event_is_a_400_problem(
    api: Handler, change: str, detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    response = api(malformed(change), LambdaContext())

    assert_refused(response, detail)
    assert_one_line(caplog)


@pytest.mark.parametrize(
    "event",
    [{}, None, [], "GET /", {"Records": [{"eventSource": "aws:sqs", "body": SECRET}]}],
    ids=["empty", "null", "list", "string", "sqs"],
)
def test_an_event_that_is_no_http_request_is_refused_in_one_log_line(
    api: Handler, event: Any, caplog: pytest.LogCaptureFixture
) -> None:
    response = api(event, LambdaContext())

    assert_refused(response, "not an API Gateway HTTP API event")
    assert_one_line(caplog)


def test_a_well_formed_event_still_reaches_the_app(api: Handler) -> None:
    assert api(http_event("POST", "/v1/brains", body={"name": "Team"}), LambdaContext())["statusCode"] == 201
    assert api(malformed("body not base64"), LambdaContext())["statusCode"] == 400
    assert json_of(api(http_event("GET", "/v1/brains/team"), LambdaContext()))["slug"] == "team"


@pytest.mark.parametrize("event", [None, [], "execute", 3], ids=["null", "list", "string", "number"])
def test_a_task_event_that_is_not_an_object_is_invalid_input(event: Any) -> None:
    ran: list[Any] = []

    def task(e: dict[str, Any], context: Any) -> dict[str, Any]:
        ran.append(e)
        return {}

    tasks = JobTasks(task=task, sweep=lambda _stop: 0, schedule=dict, mend=lambda: 0)
    handler = jobs_handler(lambda: tasks)

    with pytest.raises(InvalidInput, match="not a job task event"):
        handler(event, LambdaContext())
    assert ran == []
    assert handler({"action": "sweep"}, LambdaContext(900_000)) == {"settled": 0, "mended": 0}
