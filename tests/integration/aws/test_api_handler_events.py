"""GET /v1/brains/{brainId}/events on AWS: API Gateway buffers a response whole, so the endless
change stream is refused at once with a 405 Problem+JSON (and /openapi.json says so), instead of
every call running into the integration timeout as a 5xx."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cairn.entrypoints.aws_lambda import api_handler
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.container import fake_container

EVENTS = "/v1/brains/{brainId}/events"


def test_the_change_stream_answers_405_at_once_on_aws(tmp_path: Path) -> None:
    h = api_handler(lambda: fake_container(tmp_path, backend="aws"))
    assert h(http_event("POST", "/v1/brains", body={"name": "Team"}), LambdaContext())["statusCode"] == 201
    started = time.monotonic()
    refused = h(http_event("GET", "/v1/brains/team/events"), LambdaContext())
    elapsed = time.monotonic() - started
    assert refused["statusCode"] == 405, body_of(refused)
    assert elapsed < 5  # an answer, not a stream held open until API Gateway's 29 s timeout
    assert refused["headers"]["content-type"] == "application/problem+json"
    assert refused["headers"]["allow"] == ""
    problem = json_of(refused)
    assert problem["status"] == 405 and problem["code"] == "method_not_allowed"
    assert "AWS" in problem["detail"] and "stat" in problem["detail"]
    # The brain is still resolved first: an unknown one is a 404, as the document says.
    assert h(http_event("GET", "/v1/brains/nope/events"), LambdaContext())["statusCode"] == 404


def test_the_aws_document_declares_the_405_and_no_stream(tmp_path: Path) -> None:
    h = api_handler(lambda: fake_container(tmp_path, backend="aws"))
    document = json.loads(body_of(h(http_event("GET", "/openapi.json", anonymous=True), LambdaContext())))
    operation = document["paths"][EVENTS]["get"]
    assert operation["operationId"].startswith("brain_events_")
    assert "200" not in operation["responses"]
    refusal = operation["responses"]["405"]
    assert refusal["content"] == {
        "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
    }
    assert "text/event-stream" not in json.dumps(operation)


def test_the_embedded_server_still_streams(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from cairn.entrypoints.http import create_app

    with TestClient(create_app(fake_container(tmp_path)), base_url="http://localhost") as client:
        operation = client.get("/openapi.json").json()["paths"][EVENTS]["get"]
    assert "405" not in operation["responses"]
    assert list(operation["responses"]["200"]["content"]) == ["text/event-stream"]
