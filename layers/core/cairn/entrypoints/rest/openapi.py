"""The OpenAPI document, made to say what the server answers.

Routes declare what FastAPI can express (parameter constraints, request bodies, success responses).
This module adds the rest, in one place, after FastAPI has built the document:

- every /v1 operation lists each error status it can answer, with the Problem schema under
  `application/problem+json` (rest/problems.py), by rules over the operation itself:

    every operation             401 no credential or a refused one, 403 scope or brain refused,
                                429 rate limited, 500 internal_error, 503 the token issuer's keys
                                could not be fetched
    any parameter or a body     400 validation_error
    a path parameter            404 the brain (session, job, key) does not exist
    a request body              413 above its cap, 415 another Content-Type
    a mutation (not GET/HEAD,   409 a concurrent writer won, a name is taken, a session is closed
     scope above read: authz.py)

  and `EXTRA_STATUSES` for what the rules cannot see;
- FastAPI's 422 `HTTPValidationError` goes: FastAPI adds it to every operation with parameters
  (there is no switch), and the server never answers 422 (validation failures are 400);
- HEAD responses carry no content;
- an `Optional` query parameter is documented as the string it is on the wire, not `anyOf` null;
- `DOC_REQUIRED`: parameters the document asks for although the server still accepts an
  alternative it keeps for old clients (OpenAPI cannot say "this or that").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, Field

from cairn.auth.principal import READ
from cairn.entrypoints.rest.authz import ROUTE_SCOPES, B
from cairn.entrypoints.rest.body import inline_schema
from cairn.entrypoints.rest.problems import API_PREFIX, PROBLEM_JSON

EVENT_STREAM = "text/event-stream"


class ProblemItem(BaseModel):
    loc: list[str]
    msg: str


class Problem(BaseModel):
    """An error (RFC 9457 style): every non-2xx response under /v1."""

    status: int = Field(ge=400, le=599)
    title: str
    detail: str
    code: str = Field(description="Machine-readable: validation_error, not_found, conflict, ...")
    errors: list[ProblemItem] | None = Field(default=None, description="validation_error: each failure")


_DESCRIPTIONS = {
    400: "validation_error: a parameter or the body is invalid",
    401: "unauthorized: no credential, or one that was refused (WWW-Authenticate says how to get one)",
    403: "forbidden: the credential lacks the scope, or may not use this brain",
    404: "not_found: the brain, or what the request names in it, does not exist",
    409: "conflict: a concurrent writer won, the name is taken, or the session is closed",
    413: "payload_too_large (file_too_large for an upload): the body is above its cap",
    415: "unsupported_media_type: the body's Content-Type (or Content-Encoding) is not accepted",
    429: "rate_limited: too many requests; retry after Retry-After seconds",
    500: "internal_error",
    502: "fetch_failed: the URL could not be fetched",
    503: "auth_unavailable: the token issuer could not be reached; retry after Retry-After seconds",
}
_HEADERS = {
    401: {"WWW-Authenticate": "Bearer challenge with the resource metadata URL (RFC 9728)"},
    429: {"Retry-After": "Seconds to wait"},
    503: {"Retry-After": "Seconds to wait"},
}
COMMON_STATUSES = (401, 403, 429, 500, 503)

EXTRA_STATUSES: dict[tuple[str, str], tuple[int, ...]] = {
    ("POST", f"{B}/documents/ingest/url"): (502,),  # fetch_failed
    ("GET", "/v1/admin/audit"): (404,),  # an unknown `brain`
    ("POST", "/v1/admin/keys"): (404,),  # an unknown brain in `brains`
    ("POST", "/v1/archive/import"): (404,),  # an unknown brain id in `brain`
    ("POST", "/v1/erasures"): (404,),  # nothing of the subject stored, or an unknown brain in `brains`
}

DOC_REQUIRED: dict[tuple[str, str], tuple[str, str]] = {
    # (parameter asked for, the legacy alternative marked deprecated)
    ("DELETE", f"{B}/documents"): ("path", "id"),
}


def sse_responses(description: str, events: Sequence[str]) -> dict[int | str, dict[str, Any]]:
    """A route's `responses=` for a 200 of server-sent events; the schema describes each event, as
    OpenAPI 3.1 reads `schema` on a stream (3.2 calls it `itemSchema`)."""
    event = {
        "type": "object",
        "required": ["id", "event", "data"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$"},
            "event": {"type": "string", "enum": list(events)},
            "data": {"type": "string"},
        },
    }
    return {200: {"description": description, "content": {EVENT_STREAM: {"schema": event}}}}


def install_openapi(app: FastAPI) -> None:
    """Make `app.openapi()` (and /openapi.json) return the corrected document."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = correct(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def correct(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas["Problem"] = inline_schema(Problem)
    for template, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            _correct_operation(method.upper(), template, operation)
    return document


def error_statuses(method: str, template: str, operation: dict[str, Any]) -> set[int]:
    """The error statuses an operation can answer, by the rules in the module docstring."""
    statuses = set(COMMON_STATUSES)
    if operation.get("parameters") or "requestBody" in operation:
        statuses.add(400)
    if "{" in template:
        statuses.add(404)
    if "requestBody" in operation:
        statuses.update((413, 415))
    if method not in ("GET", "HEAD") and ROUTE_SCOPES.get((method, template), READ) != READ:
        statuses.add(409)
    statuses.update(EXTRA_STATUSES.get((method, template), ()))
    return statuses


def _correct_operation(method: str, template: str, operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    responses.pop("422", None)
    for parameter in operation.get("parameters", ()):
        _plain_optional(parameter)
    required = DOC_REQUIRED.get((method, template))
    if required is not None:
        _require(operation, *required)
    if not template.startswith(API_PREFIX + "/"):
        return
    for status in sorted(error_statuses(method, template, operation)):
        responses[str(status)] = _problem_response(status, with_body=method != "HEAD")
    if method == "HEAD":
        for response in responses.values():
            response.pop("content", None)


def _problem_response(status: int, *, with_body: bool) -> dict[str, Any]:
    response: dict[str, Any] = {"description": _DESCRIPTIONS[status]}
    if with_body:
        response["content"] = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    headers = _HEADERS.get(status)
    if headers:
        response["headers"] = {
            name: {"description": text, "required": True, "schema": {"type": "string"}}
            for name, text in headers.items()
        }
    return response


def _plain_optional(parameter: dict[str, Any]) -> None:
    """`str | None` renders as anyOf [string, null]; on the wire an absent parameter is the None."""
    schema = parameter.get("schema", {})
    variants = schema.get("anyOf")
    if not isinstance(variants, list):
        return
    kept = [v for v in variants if v.get("type") != "null"]
    if len(kept) == 1 and len(kept) < len(variants):
        del schema["anyOf"]
        schema.update(kept[0])


def _require(operation: dict[str, Any], name: str, legacy: str) -> None:
    for parameter in operation.get("parameters", ()):
        if parameter.get("name") == name:
            parameter["required"] = True
        elif parameter.get("name") == legacy:
            parameter["deprecated"] = True
