"""The checks of an inbound JSON-RPC message (kit/inbound.py) and the stdio transport's line reader."""

from __future__ import annotations

import io
import json

import pytest
from mcp_types import INVALID_REQUEST, PARSE_ERROR, JSONRPCRequest

from cairn.entrypoints.mcp.kit.inbound import Refused, lone_surrogate_error, message_of
from cairn.entrypoints.mcp.stdio_lines import LineTooLong, next_line


def refusal(raw: bytes) -> Refused:
    with pytest.raises(Refused) as refused:
        message_of(raw)
    return refused.value


def test_a_message_is_parsed_with_the_sdk_types() -> None:
    message = message_of(b'{"jsonrpc":"2.0","id":"a","method":"ping"}\r\n')
    assert isinstance(message, JSONRPCRequest) and message.id == "a"


def test_a_lone_surrogate_is_named_as_http_names_it() -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"q":"\\udc00"}}'
    refused = refusal(raw)
    assert (refused.code, refused.request_id) == (PARSE_ERROR, 7)
    assert refused.message == lone_surrogate_error(raw)
    assert refused.message.startswith("Parse error: a lone surrogate (\\udc00) at byte 61")


@pytest.mark.parametrize(
    ("raw", "request_id"),
    [
        (b'{"jsonrpc":"2.0","id":3,"method":"ping","x":' + b"[" * 300 + b"]" * 300 + b"}", 3),
        (b'{"jsonrpc":"2.0","id":3,"method":"ping","x":' + b"[" * 5000 + b"]" * 5000 + b"}", None),
        (b'{"jsonrpc":"2.0","id":3,"method":"ping"', None),
        (b'{"jsonrpc":"2.0","id":3,"result":{},"x":' + b"[" * 300 + b"]" * 300 + b"}", None),
    ],
    ids=["deep", "deeper than Python reads", "truncated", "a response"],
)
def test_text_that_is_not_json_is_a_parse_error(raw: bytes, request_id: int | None) -> None:
    refused = refusal(raw)
    assert (refused.code, refused.request_id) == (PARSE_ERROR, request_id)
    assert refused.message.startswith("Parse error: ")


@pytest.mark.parametrize(
    ("raw", "request_id", "said"),
    [
        (b'{"jsonrpc":"1.0","id":4,"method":"ping"}', 4, "jsonrpc: Input should be '2.0'"),
        (b'{"jsonrpc":"2.0","id":"r","method":5}', "r", "method: Input should be a valid string"),
        (b'{"jsonrpc":"2.0","id":4}', None, "result: Field required"),
        (b'[{"jsonrpc":"2.0","id":4,"method":"ping"}]', None, "one JSON object"),
        (b"17", None, "one JSON object"),
    ],
)
def test_json_that_is_no_message_is_an_invalid_request(raw: bytes, request_id: object, said: str) -> None:
    refused = refusal(raw)
    assert (refused.code, refused.request_id) == (INVALID_REQUEST, request_id)
    assert refused.message.startswith("Invalid Request: ") and said in refused.message


@pytest.mark.parametrize("request_id", [None, [1], {"a": 1}, True, 1.5])
def test_a_request_whose_id_is_of_another_kind_is_an_invalid_request(request_id: object) -> None:
    """Such a request would read as a notification, and its sender would wait for an answer
    nobody sends."""
    refused = refusal(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())
    assert (refused.code, refused.request_id) == (INVALID_REQUEST, None)
    assert refused.message == "Invalid Request: a request's id is a string or an integer"


def _call(depth: int) -> bytes:
    data = "[" * (depth - 1) + "1" + "]" * (depth - 1)  # the arguments object, then depth - 1 lists
    params = {"name": "t", "arguments": {"d": json.loads(data)}}
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}).encode()


def test_arguments_may_nest_as_deep_as_a_request_body_and_no_deeper() -> None:
    assert isinstance(message_of(_call(64)), JSONRPCRequest)
    refused = refusal(_call(65))
    assert (refused.code, refused.request_id) == (PARSE_ERROR, 9)
    assert refused.message == "Parse error: arguments nested deeper than 64 levels"


def test_a_notification_and_a_response_keep_their_shapes() -> None:
    assert message_of(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert message_of(b'{"jsonrpc":"2.0","id":"s-1","result":{}}')


def test_a_line_past_the_cap_is_read_past_and_the_next_line_kept() -> None:
    source = io.BufferedReader(io.BytesIO(b"short\n" + b"x" * 5000 + b"\n" + b"12345678\nlast"), 64)
    assert next_line(source, 9) == b"short\n"
    with pytest.raises(LineTooLong):
        next_line(source, 9)
    assert next_line(source, 9) == b"12345678\n"  # exactly the cap, its end included
    assert next_line(source, 9) == b"last"
    assert next_line(source, 9) is None
