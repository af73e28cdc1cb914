"""The API function fuzzed with API Gateway events: well-formed HTTP API (payload 2.0) events for
routes of every surface, with one part changed by Hypothesis (any JSON value in any field of the
event, its request context, its HTTP description or the authorizer's claims; a field removed; a
path of any characters under each surface's prefix; a query string, header or cookie that breaks
parsers). Whatever arrives, the function answers:
a response whose status is under 500, never an exception out of the handler, and nothing logged
as an error but the one line that names a refused event.

CAIRN_FUZZ_EXAMPLES sets the examples per route (default 15) for a longer hunt."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.entrypoints.aws_lambda import Handler, api_handler
from tests.events.apigw import LambdaContext, http_event
from tests.fakes.container import fake_container
from tests.support.fuzzing import EXAMPLES, ErrorLog, errors_logged, fixed
from tests.support.schema_args import NASTY, json_values

REFUSED = "cairn.lambda: refused an API invocation"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "memory_search", "arguments": {"query": "kettle"}},
}
EVENTS = (
    http_event("GET", "/healthz", anonymous=True),
    http_event("POST", "/v1/brains", body={"name": "Team"}),
    http_event("GET", "/v1/brains/team/documents", query={"path": "notes/a.md"}),
    http_event("POST", "/v1/brains/team/search", body={"query": "kettle", "top_k": 3}),
    http_event("POST", "/mcp", body=INIT, headers={"accept": "application/json, text/event-stream"}),
    http_event("GET", "/zengram/memory/search", query={"q": "kettle"}, headers={"x-api-key": "k"}),
    http_event("GET", "/ui", anonymous=True),
    http_event("POST", "/ui/sign-in", body="credential=x&csrf=y", anonymous=True),
    http_event("GET", "/.well-known/oauth-protected-resource/mcp", anonymous=True),
)
PATHS = (
    (),
    ("requestContext",),
    ("requestContext", "http"),
    ("requestContext", "authorizer", "jwt", "claims"),
    ("headers",),
)
"""Where in an event a field is changed: the event, its request context, its HTTP description,
the JWT authorizer's claims, its headers."""
FIELDS = (
    "version", "rawPath", "rawQueryString", "body", "isBase64Encoded", "cookies", "headers",
    "queryStringParameters", "requestContext", "http", "method", "path", "sourceIp", "protocol",
    "authorizer", "sub", "tenant", "scope", "client_id", "cognito:groups", "host", "content-type",
    "x-api-key", "authorization", "cookie", "x-forwarded-port", "origin", "requestId", "domainName",
)  # fmt: skip
WEIRD = (
    "/v1/brains/%", "/v1/brains/%zz", "//", "/v1/../ui", "/ui/brains/%0A", "/zengram/%FF",
    "/mcp/\u00e9", "a=%ff&&=&b", "path=%00", "q=" + "x" * 9000, "Bearer ", "Bearer \u00e9",
    "text/plain; charset=utf-99", "cairn_ui=; cairn_csrf=\u00e9", "203.0.113.7, 10.0.0.1",
    "\ud800", "q=\udfff", "\u00b2", "example.com:\u00b3", "example.com:" + "1" * 5000,
)  # fmt: skip

PREFIXES = (
    "/", "/mcp", "/mcp/", "/mcp/zengram/", "/v1/brains/team/", "/v1/", "/zengram/", "/zengram/entities/",
    "/ui/", "/ui/brains/team/items/", "/.well-known/oauth-protected-resource/mcp/", "/healthz/",
)  # fmt: skip
"""Where a drawn path begins, so that it reaches each surface's routing and refusals."""

text = st.sampled_from(NASTY + WEIRD) | st.text(max_size=30)
value = text | json_values


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    event = copy.deepcopy(draw(st.sampled_from(EVENTS), label="event"))
    if draw(st.booleans(), label="another path?"):  # decoded in the context, encoded in rawPath
        path = draw(st.sampled_from(PREFIXES), label="prefix") + draw(st.text(max_size=12), label="rest")
        event["requestContext"]["http"]["path"], event["rawPath"] = path, quote(path, safe="/")
    for _ in range(draw(st.integers(0, 3), label="changes")):
        where = draw(st.sampled_from(PATHS), label="where")
        node: Any = event
        for key in where:
            node = node.setdefault(key, {}) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        name = draw(st.sampled_from(FIELDS) | st.text(max_size=8), label="field")
        if draw(st.integers(0, 5), label="remove?") == 0:
            node.pop(name, None)
        else:
            node[name] = draw(value if draw(st.booleans(), label="any JSON?") else text, label="value")
    return event


@pytest.fixture
def api(tmp_path: Path) -> Handler:
    return api_handler(lambda: fake_container(tmp_path, backend="aws"))


@pytest.fixture
def errors() -> Iterator[ErrorLog]:
    with errors_logged("cairn", "mangum") as log:
        yield log


def _fuzz(api: Handler, errors: ErrorLog, examples: int) -> None:
    @fixed(examples)
    @given(events())
    def call(event: dict[str, Any]) -> None:
        errors.seen.clear()
        response = api(event, LambdaContext())
        shown = f"{json.dumps(event, default=repr)[:600]}: {str(response)[:300]}"
        assert isinstance(response, dict) and isinstance(response.get("statusCode"), int), shown
        assert response["statusCode"] < 500, shown
        assert all(seen.startswith(REFUSED) for seen in errors.seen), f"{shown}: {errors.seen}"

    call()


def test_no_event_breaks_the_api_function(api: Handler, errors: ErrorLog) -> None:
    assert api(EVENTS[1], LambdaContext())["statusCode"] == 201  # brain `team`, which events aim at
    _fuzz(api, errors, EXAMPLES * len(EVENTS))
    assert api(EVENTS[0], LambdaContext())["statusCode"] == 200  # still serving


LONE = "\ud800"  # JSON's "\\ud800": a string no UTF-8 encoder takes


@pytest.mark.parametrize(
    ("where", "name", "bad"),
    [
        (("rawQueryString",), None, "q=" + LONE),
        (("headers",), "x-note", LONE),
        (("headers",), "x-" + LONE, "v"),
        (("body",), None, '{"name": "' + LONE + '"}'),
        (("cookies",), None, ["a=" + LONE]),
        (("requestContext", "http", "method"), None, "P" + LONE),
        (("requestContext", "http", "sourceIp"), None, LONE),
        (("headers",), "host", "abc.execute-api.us-east-1.amazonaws.com:\u00b2"),  # a digit int() refuses
        (("headers",), "x-forwarded-port", "\u00b3"),
        (("headers",), "host", "abc.execute-api.us-east-1.amazonaws.com:" + "1" * 5000),
    ],
)
def test_text_mangum_could_not_encode_or_a_port_it_could_not_read_is_refused(
    api: Handler, errors: ErrorLog, where: tuple[str, ...], name: str | None, bad: Any
) -> None:
    event = copy.deepcopy(EVENTS[1])
    node = event
    for key in where[:-1]:
        node = node[key]
    if name is None:
        node[where[-1]] = bad
    else:
        node[where[-1]][name] = bad

    response = api(event, LambdaContext())

    assert response["statusCode"] == 400, response
    assert json.loads(response["body"])["code"] == "validation_error"
    assert [seen.startswith(REFUSED) for seen in errors.seen] == [True]


def test_an_event_that_breaks_it_is_caught(
    api: Handler, errors: ErrorLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("cairn.entrypoints.aws_lambda.http_event_problem", fail)
    with pytest.raises(RuntimeError, match="boom"):
        _fuzz(api, errors, 5)
