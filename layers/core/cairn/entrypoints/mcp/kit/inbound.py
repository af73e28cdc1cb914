"""A JSON-RPC message as a client sent it, checked before the SDK reads it: each HTTP body
(mcp/http.py, whose SDK transport then parses it as `message_of` does) and each stdio line
(mcp/stdio_lines.py, which answers a refusal itself: the SDK's stdio reader would drop it unanswered).

A lone surrogate escape is named (the SDK's parser would only say "unexpected end of hex escape");
text that is not JSON, or nests deeper than a request body may (json_input.MAX_DEPTH levels of
arguments), is a parse error (-32700); JSON
that is not one JSON-RPC 2.0 message is an invalid request (-32600), on both transports: the SDK's
HTTP transport would answer it -32602 with pydantic's dump, and take a request whose id is null or a
list for a notification, answered by nobody.
"""

from __future__ import annotations

import json

import pydantic_core
from mcp_types import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    JSONRPCMessage,
    JSONRPCRequest,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from cairn.domain import json_input
from cairn.domain.echo import safe_echo

ARGUMENTS_AT = 2
"""Levels of a tools/call message above its arguments object (the message, its params): the
arguments may nest json_input.MAX_DEPTH levels, as a request body of the HTTP APIs may."""


class Refused(Exception):
    """A message answered with a JSON-RPC error: its code, message and the request's id (None when
    it cannot be told); over HTTP, in `status`."""

    def __init__(
        self, code: int, message: str, request_id: RequestId | None = None, *, status: int = 400
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.status = status


METHOD_CHARS = 100
"""The longest method name the SDK is left to answer: its "Method not found" quotes the name whole
(in `data`), so a longer one, or one domain/echo.py would not quote as it is (a control character,
a credential), is answered here, as the SDK answers, without the quote."""


def lone_surrogate_error(raw: bytes) -> str | None:
    """The parse error's message for JSON text holding a lone surrogate escape, None without one."""
    lone = json_input.lone_surrogate(raw)
    if lone is None:
        return None
    at, escape = lone
    return f"Parse error: a lone surrogate ({escape}) at byte {at}: JSON strings must be valid Unicode"


def message_of(raw: bytes) -> JSONRPCMessage:
    """The JSON-RPC message in `raw`, parsed as the SDK's HTTP transport parses a body; Refused
    when it is not one."""
    lone = lone_surrogate_error(raw)
    if lone is not None:
        raise Refused(PARSE_ERROR, lone, _lenient_id(raw))
    try:
        value = pydantic_core.from_json(raw)
    except ValueError as exc:
        raise Refused(PARSE_ERROR, f"Parse error: {exc}", _lenient_id(raw)) from None
    if json_input.too_deep(value, ARGUMENTS_AT + json_input.MAX_DEPTH):
        limit = json_input.MAX_DEPTH
        raise Refused(
            PARSE_ERROR, f"Parse error: arguments nested deeper than {limit} levels", _request_id(value)
        )
    if isinstance(value, dict) and "method" in value and "id" in value and _request_id(value) is None:
        # A request whose id is of another kind (null, a list...) would pass as a notification and
        # never be answered; JSON-RPC calls it an invalid request, and MCP forbids a null id.
        raise Refused(INVALID_REQUEST, "Invalid Request: a request's id is a string or an integer")
    try:
        message = jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        raise Refused(INVALID_REQUEST, _invalid(value, exc), _request_id(value)) from None
    if isinstance(message, JSONRPCRequest) and safe_echo(message.method, METHOD_CHARS) != message.method:
        raise Refused(METHOD_NOT_FOUND, "Method not found", message.id, status=200)
    return message


def _lenient_id(raw: bytes) -> RequestId | None:
    # Python's own parser reads lone surrogates and nests to about a thousand levels, so the id of
    # a request refused for either is still known; answering with it ends the client's wait.
    try:
        return _request_id(json.loads(raw))
    except (ValueError, RecursionError):
        return None


def _request_id(value: object) -> RequestId | None:
    """The id of what reads as a request (an object with a method): a response's id is the
    server's own, never echoed back."""
    if not isinstance(value, dict) or "method" not in value:
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    return found


def _invalid(value: object, exc: ValidationError) -> str:
    if not isinstance(value, dict):
        return "Invalid Request: a JSON-RPC message is one JSON object (batches are not supported)"
    # The adapter tries every kind of message; the complaints worth reading are the likeliest kind's.
    if "method" in value:
        kind = "JSONRPCRequest" if "id" in value else "JSONRPCNotification"
    else:
        kind = "JSONRPCError" if "error" in value else "JSONRPCResponse"
    complaints = [
        f"{'.'.join(str(p) for p in err['loc'][1:]) or 'message'}: {err['msg']}"
        for err in exc.errors(include_url=False)
        if err["loc"][:1] == (kind,)
    ]
    said = f" ({'; '.join(complaints[:5])})" if complaints else ""
    return f"Invalid Request: not a JSON-RPC 2.0 message{said}"
