"""Problem+JSON (RFC 7807-style) errors for the REST surface.

Every non-2xx response under /v1 carries `{status, title, detail, code}` (Jeffs PROTOCOL.md
"Error shape"). CairnError codes map onto statuses here; request-parsing failures become
`validation_error` 400; anything unexpected becomes a bare `internal_error` 500 whose detail
never carries exception text.

Mapping choices: `url_refused` is 400 (the caller's URL is the problem, not the upstream);
`unsupported_content` is 415 (the bytes are of a kind we cannot ingest); `fetch_failed` is 502.
A full disk is 503 `storage_full` with Retry-After (not WebDAV's 507: every operation already
declares 503, and clients already wait and retry on it), a damaged database 503 `damaged_store`;
an OSError or sqlite3 error meaning either is answered so wherever it was raised
(domain/errors.py `storage_failure`).

The framework's own errors are handled here for the whole app: a 405 names in `Allow` every
method the path serves, and on the MCP endpoints the error is a JSON-RPC error, as the MCP SDK
shapes its own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from cairn.auth.access import InsufficientScope
from cairn.domain import json_input
from cairn.domain.echo import safe_echo
from cairn.domain.errors import (
    CairnError,
    DamagedStore,
    InvalidInput,
    StorageFull,
    Unavailable,
    storage_failure,
)

log = logging.getLogger("cairn.rest")

PROBLEM_JSON = "application/problem+json"
API_PREFIX = "/v1"

STATUS_BY_CODE: dict[str, int] = {
    "validation_error": 400,
    "url_refused": 400,
    "unauthorized": 401,
    "invalid_token": 401,
    "forbidden": 403,
    "not_found": 404,
    "no_brain": 404,
    "conflict": 409,
    "restore_incomplete": 409,  # the brain stays `restoring` until the import is run again
    "payload_too_large": 413,
    "file_too_large": 413,
    "unsupported_media_type": 415,
    "unsupported_content": 415,
    "rate_limited": 429,
    "internal_error": 500,
    "fetch_failed": 502,
    "bad_gateway": 502,
    "auth_unavailable": 503,
    "unavailable": 503,
    "damaged_content": 503,  # a stored file is damaged: nothing the caller sent is wrong
    "damaged_store": 503,  # a database of the store is damaged: `cairn check` says which
    "storage_full": 503,  # with Retry-After: the disk may have room again soon, nothing sent is wrong
    "timeout": 504,
}

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

# For HTTP errors raised by the framework itself (unknown route, wrong method, ...).
_CODE_BY_STATUS: dict[int, str] = {
    400: "validation_error",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal_error",
    502: "bad_gateway",
    504: "timeout",
}


class UnsupportedMediaType(CairnError):
    """The request's Content-Type is not the one the endpoint accepts."""

    code = "unsupported_media_type"


def problem(status: int, detail: str, code: str | None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"status": status, "title": _title(status), "detail": safe_echo(detail)}
    if code is not None:
        body["code"] = code
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


# Titles as PROTOCOL.md writes them where Python's phrase differs (RFC 2616 "Request Entity ...").
_TITLES = {413: "Payload Too Large", 414: "URI Too Long", 416: "Range Not Satisfiable"}


def _title(status: int) -> str:
    if status in _TITLES:
        return _TITLES[status]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


def mcp_error(
    status: int,
    message: str,
    *,
    code: int = -32600,
    data: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    request_id: str | int | None = None,
) -> JSONResponse:
    """A refusal on an MCP endpoint, shaped as the MCP SDK shapes its own: a JSON-RPC error, with the
    request's id where it could be read (else none: clients put back their request's). MCP clients
    report its message as the failed call's error instead of a bare HTTP status."""
    error: dict[str, Any] = {"code": code, "message": safe_echo(message)}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return JSONResponse(body, status_code=status, headers=headers)


def _is_api(request: Request) -> bool:
    path = request.url.path
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


_FASTAPI_BODY_ERROR = "There was an error parsing the body"
_MESSAGES = {
    "string_unicode": "holds a lone surrogate: JSON strings must be valid Unicode",
    "model_type": "Input should be an object",  # not "… or instance of <the model's class name>"
}
"""Pydantic's messages said again where a caller would not recognise what they meant."""


async def _why_not_json(request: Request) -> str:
    """What FastAPI only calls "an error parsing the body": not JSON, nested too deep, or a lone
    surrogate (the body is kept on the request once read)."""
    try:
        json_input.loads(await request.body())
    except InvalidInput as exc:
        return exc.message
    return _FASTAPI_BODY_ERROR


VALIDATION_ITEMS = 20
"""The most `{loc, msg}` items an answer lists: a body of a million unknown fields is refused in a
short answer, not one that names each."""
_LOC_CHARS = 100


def validation_detail(errors: Sequence[Any]) -> tuple[str, list[dict[str, Any]]]:
    """A one-line summary plus `{loc, msg}` items; submitted values are never echoed, and the names
    a caller chose (an unknown field's) are quoted as domain/echo.py says."""
    items = [
        {
            "loc": [safe_echo(str(p), _LOC_CHARS) for p in e.get("loc", ())],
            "msg": safe_echo(_MESSAGES.get(e.get("type"), str(e.get("msg", "invalid")))),
        }
        for e in errors[:VALIDATION_ITEMS]
    ]
    summary = "; ".join(f"{'.'.join(i['loc']) or 'request'}: {i['msg']}" for i in items[:5])
    return summary or "invalid request", items


async def _on_cairn_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CairnError)
    status = STATUS_BY_CODE.get(exc.code)
    if status is None or exc.code == "internal_error":  # service text here may describe internals
        log.error("internal error on %s %s: %s", request.method, request.url.path, exc.message)
        return problem(500, "internal server error", "internal_error")
    if isinstance(exc, InsufficientScope):  # RFC 6750: the scope the request needed
        response = problem(status, exc.message, exc.code)
        needed = f', scope="{exc.scope}"' if exc.scope else ""
        response.headers["WWW-Authenticate"] = f'Bearer error="insufficient_scope"{needed}'
        return response
    if isinstance(exc, StorageFull | DamagedStore):  # the operator's to see, not only the caller's
        log.error("%s on %s %s: %s", exc.code, request.method, request.url.path, exc.message)
    response = problem(status, exc.message, exc.code)
    if isinstance(exc, Unavailable):
        response.headers["Retry-After"] = str(exc.retry_after_s)
    return response


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if not _is_api(request):
        return await request_validation_exception_handler(request, exc)
    detail, items = validation_detail(exc.errors())
    return problem(400, detail, "validation_error", errors=items)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 405:
        exc.headers = {**(exc.headers or {}), "Allow": allowed_methods(request)}
    detail = exc.detail if isinstance(exc.detail, str) else _title(exc.status_code)
    if exc.status_code == 400 and detail == _FASTAPI_BODY_ERROR:
        detail = await _why_not_json(request)
    if is_mcp(request.url.path):
        response: Response = mcp_error(exc.status_code, detail)
    elif _is_api(request):
        response = problem(exc.status_code, detail, _CODE_BY_STATUS.get(exc.status_code))
    else:
        return await http_exception_handler(request, exc)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path; Starlette's 405 names only the first route's."""
    routes = request.app.router.routes
    allowed = [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]
    return ", ".join(allowed)


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    known = storage_failure(exc)  # a full disk, a damaged database: said as such, not as a crash
    if known is not None:
        if not _is_api(request):
            log.error("%s on %s %s: %s", known.code, request.method, request.url.path, exc)
            return PlainTextResponse(known.message, status_code=STATUS_BY_CODE.get(known.code, 503))
        log.warning("what the disk or SQLite said: %s", exc)  # _on_cairn_error logs the request
        return await _on_cairn_error(request, known)
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    if not _is_api(request):
        return PlainTextResponse("Internal Server Error", status_code=500)
    return problem(500, "internal server error", "internal_error")


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(CairnError, _on_cairn_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)
