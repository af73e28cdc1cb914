"""Error answers that quote what the caller sent, on every surface: a 1 MB string, control
characters and ANSI escapes, CR/LF, NUL, a bidirectional override, a lone surrogate and credentials
(a bearer token, a Cairn key, a URL's user and password), sent where an error message quotes them
(ids, names, paths, tool and field names, JSON-RPC methods). No answer is a 500; what it says is
bounded, escapes the unsafe characters and does not say the credential back (domain/echo.py)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from cairn.entrypoints.mcp.registry import SURFACES, http_paths
from tests.integration.mcp.conftest import LiveServer, start_server

KEY = "cairn_key_" + "Zq9" * 15
SECRET_PARTS = ("Zq9Zq9Zq9", "hunter2secretpw")
UNSAFE = "\x00\x01\x1b\r\n\x7f\x9b\u202e\ud800"
CONTROL = "x\x00\x01\x1b[31mRED\x1b[0m\r\nForged: line\x7f\x9b\u202e"
VALUES = {
    "long": "A" * 1_000_000,
    "control": CONTROL,
    "surrogate": "ab\ud800cd",
    "bearer": f"Bearer {KEY}",
    "key": KEY,
    "url": "https://alice:hunter2secretpw@example.com/x",
}
URL_CHARS = 12_000
"""A long value in a URL: uvicorn refuses a request line past 16 KiB before any route sees it."""
SAID_CHARS = 2_000
"""The most an error answer's texts may say in all: a message and its quote are bounded (1,000)."""
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MCP_PATHS = tuple(http_paths(surface)[0] for surface in SURFACES)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from start_server(tmp_path_factory.mktemp("echo"))


def _in_url(value: str) -> str:
    value = value[:URL_CHARS]
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def _json(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8", "surrogatepass")  # a lone surrogate as its \\ud800 escape


def _texts(response: httpx.Response) -> list[str]:
    """Every string of a JSON answer (an SSE one's data), an HTML error page's message, else the
    body's text."""
    if response.headers.get("content-type", "").startswith("text/html"):
        found = re.search(r'<p class="error" role="alert">(.*?)</p>', response.text, re.S)
        assert found is not None, response.text[:300]
        return [html.unescape(found.group(1))]
    try:
        body = response.json()
    except ValueError:
        data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        if not data:
            return [response.text]
        body = json.loads(data[0])
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            found.extend(str(k) for k in value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body)
    return found


def _mcp(client: httpx.Client, path: str, message: dict[str, Any]) -> httpx.Response:
    return client.post(path, content=_json({"jsonrpc": "2.0", "id": 1, **message}), headers=MCP_HEADERS)


def _tool(path: str, name: str, field: str | None = None) -> Callable[[httpx.Client, str], httpx.Response]:
    def send(client: httpx.Client, value: str) -> httpx.Response:
        if field is None:  # the value is the tool's name
            params: dict[str, Any] = {"name": value, "arguments": {}}
        else:
            params = {"name": name, "arguments": {field: value}}
        return _mcp(client, path, {"method": "tools/call", "params": params})

    return send


def _method(path: str) -> Callable[[httpx.Client, str], httpx.Response]:
    return lambda client, value: _mcp(client, path, {"method": value, "params": {}})


SENDS: dict[str, Callable[[httpx.Client, str], httpx.Response]] = {
    "rest brain id": lambda c, v: c.get(f"/v1/brains/{_in_url(v)}"),
    "rest job id": lambda c, v: c.get(f"/v1/jobs/{_in_url(v)}"),
    "rest unknown body field": lambda c, v: c.post(
        "/v1/brains", content=_json({v: 1}), headers={"content-type": "application/json"}
    ),
    **{f"mcp {path} unknown tool": _tool(path, "") for path in MCP_PATHS},
    **{f"mcp {path} unknown method": _method(path) for path in MCP_PATHS},
    "mcp /mcp brain argument": _tool("/mcp", "memory_consolidate", "brain"),
    "mcp /mcp/admin brain argument": _tool("/mcp/admin", "admin_delete_brain", "brain"),
    "mcp /mcp/gbrain collection argument": _tool("/mcp/gbrain", "brain_list", "collection"),
    "mcp /mcp/zengram memory id": _tool("/mcp/zengram", "brain_delete", "memory_id"),
    "mcp /mcp/zengram since": _tool("/mcp/zengram", "brain_query", "since"),
    "zengram unknown route": lambda c, v: c.get(f"/zengram/{_in_url(v)}"),
    "zengram entity type": lambda c, v: c.get(f"/zengram/entities?type={_in_url(v)}"),
    "ui brain": lambda c, v: c.get(f"/ui/brains/{_in_url(v)}"),
}


@pytest.mark.parametrize("where", sorted(SENDS))
def test_an_error_says_the_callers_input_bounded_and_safe(live: LiveServer, where: str) -> None:
    with httpx.Client(base_url=live.base, timeout=60) as client:
        for kind, value in VALUES.items():
            response = SENDS[where](client, value)
            shown = f"{where} with the {kind} value: {response.status_code} {response.text[:300]!r}"
            assert response.status_code < 500, shown
            said = "\n".join(_texts(response))
            assert len(said) <= SAID_CHARS, f"{shown} ({len(said)} characters said)"
            assert not any(ch in text for text in _texts(response) for ch in UNSAFE), shown
            assert not any(part in said for part in SECRET_PARTS), shown


def test_many_unknown_fields_are_refused_in_a_short_answer(live: LiveServer) -> None:
    """Each unknown field is a complaint: the answer lists the first 20, not all 20,000."""
    body = {f"field{i}": i for i in range(20_000)}
    with httpx.Client(base_url=live.base, timeout=60) as client:
        response = client.post("/v1/brains", json=body)
    assert response.status_code == 400, response.text[:300]
    answer = response.json()
    assert answer["code"] == "validation_error"
    assert 0 < len(answer["errors"]) <= 20
    assert len(response.content) < 5_000
