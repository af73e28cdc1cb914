"""An exception leaving a Lambda function is printed by the Lambda runtime (its type's name and its
text, outside Python logging) and kept by Step Functions as the task's error: its text must name
no credential, and its name must stay what the state machines' Retry and Catch match."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from cairn.adapters.aws.sfn_attempt import JobAttemptFailed
from cairn.entrypoints.aws_lambda import JobTasks, api_handler, jobs_handler
from tests.events.apigw import LambdaContext, http_event

PASSWORD = "hunter2-not-for-the-runtime"
URL = f"https://cairn:{PASSWORD}@search.internal:9200"


def tasks_raising(error: Exception) -> JobTasks:
    def task(event: dict[str, Any], context: Any) -> NoReturn:
        raise error

    return JobTasks(task=task, sweep=lambda _stop: 0, schedule=dict, mend=lambda: 0)


def as_the_runtime_reports(error: BaseException) -> str:
    """What the runtime prints and Step Functions keeps: `errorType: errorMessage`."""
    return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize(
    "error",
    [
        JobAttemptFailed(f"ingest failed: could not reach {URL}"),
        EndpointConnectionError(endpoint_url=URL),
        ClientError({"Error": {"Code": "AccessDenied", "Message": f"no access to {URL}"}}, "GetItem"),
        OSError(2, "No such file or directory", f"/tmp/{URL}"),
        KeyError("Bearer AbC9fK2mQ7vX1pL8zR4tY6uW3sN5"),
    ],
    ids=["job attempt", "botocore endpoint", "client error", "os error (text from attributes)", "key error"],
)
def test_an_error_leaving_the_task_function_names_no_credential_and_keeps_its_name(error: Exception) -> None:
    name = type(error).__name__
    handler = jobs_handler(lambda: tasks_raising(error))

    with pytest.raises(Exception) as raised:
        handler({"job_id": "j1"}, LambdaContext())

    reported = as_the_runtime_reports(raised.value)
    assert PASSWORD not in reported and "AbC9fK2mQ7vX1pL8zR4tY6uW3sN5" not in reported
    assert type(raised.value).__name__ == name
    assert "REDACTED" in reported


def test_an_exception_without_a_credential_leaves_as_it_was() -> None:
    error = JobAttemptFailed("ingest failed: the document is not UTF-8")
    handler = jobs_handler(lambda: tasks_raising(error))

    with pytest.raises(JobAttemptFailed) as raised:
        handler({"job_id": "j1"}, LambdaContext())
    assert raised.value is error and str(raised.value) == "ingest failed: the document is not UTF-8"


def test_an_api_function_whose_store_cannot_be_reached_names_no_password(tmp_path: Path) -> None:
    def unreachable() -> NoReturn:
        raise EndpointConnectionError(endpoint_url=URL)

    api = api_handler(unreachable)

    with pytest.raises(EndpointConnectionError) as raised:
        api(http_event("GET", "/v1/brains"), LambdaContext())
    assert PASSWORD not in as_the_runtime_reports(raised.value)
    assert "search.internal" in str(raised.value)  # what failed is still said
