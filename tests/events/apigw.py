"""API Gateway HTTP API (payload format 2.0) events, as the API function receives them."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlencode

OWNER_CLAIMS = {"sub": "user-1", "tenant": "acme", "scope": "documents:read documents:write brains:admin"}
"""What API Gateway's JWT authorizer passes on for a caller with every scope."""


def http_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    iam: dict[str, str] | None = None,
    claims: dict[str, str] | None = None,
    anonymous: bool = False,
) -> dict[str, Any]:
    """An event for `method path`; a JWT-authorized caller (OWNER_CLAIMS) unless `claims`, `iam`
    or `anonymous` (a route without an authorizer) say otherwise."""
    if claims is None and iam is None and not anonymous:
        claims = OWNER_CLAIMS
    raw = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    encoded = isinstance(raw, bytes)
    hdrs = {"host": "abc123.execute-api.us-east-1.amazonaws.com", **(headers or {})}
    if body is not None and not isinstance(body, (bytes, str)):
        hdrs.setdefault("content-type", "application/json")
    authorizer: dict[str, Any] = {}
    if claims is not None:
        authorizer["jwt"] = {"claims": claims, "scopes": None}
    if iam is not None:
        authorizer["iam"] = iam
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": urlencode(query or {}),
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": hdrs["host"],
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "test",
            },
            "requestId": "req-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "22/Nov/2026:04:00:00 +0000",
            "timeEpoch": 1795492800000,
            **({"authorizer": authorizer} if authorizer else {}),
        },
        "isBase64Encoded": encoded,
    }
    if query:
        event["queryStringParameters"] = dict(query)
    if raw is not None:
        event["body"] = base64.b64encode(raw).decode() if encoded else raw
    return event


def body_of(response: dict[str, Any]) -> bytes:
    body = response.get("body") or ""
    return base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()


def json_of(response: dict[str, Any]) -> Any:
    return json.loads(body_of(response))


class LambdaContext:
    """The attributes of the Lambda context object that Powertools reads."""

    function_name = "cairn-api-test"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-api-test"
    aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    log_group_name = "/aws/lambda/cairn-api-test"
    log_stream_name = "2026/11/22/[$LATEST]abcdef"

    def __init__(self, remaining_ms: int = 29_000) -> None:
        self.remaining_ms = remaining_ms  # an API request's 29 s by default; a job task's up to 900 s

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms
