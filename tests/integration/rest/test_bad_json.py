"""JSON a caller cannot mean, on every surface that reads JSON: nested past the bound, or holding a
lone surrogate. Each answers 400 in its own style and names what is wrong; nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.mcp.conftest import LiveServer, start_server

DEEP = "[" * 1000 + "]" * 1000
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    for server in start_server(tmp_path):
        server.container.brains.create("Notes", slug="n")
        yield server


def _post(live: LiveServer, path: str, body: str) -> httpx.Response:
    return httpx.post(f"{live.base}{path}", content=body.encode(), headers=MCP_HEADERS, timeout=30)


def _call(name: str, arguments: str) -> str:
    return (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'
        + name
        + '","arguments":'
        + arguments
        + "}}"
    )


CASES: list[tuple[str, str, str, str]] = [
    # (path, body, style, what the message names)
    ("/v1/brains/n/documents/batch-ops", '{"ops": ' + DEEP + "}", "problem", "nested deeper than 64 levels"),
    ("/v1/brains/n/search", '{"query": ' + DEEP + "}", "problem", "nested deeper than 64 levels"),
    ("/v1/brains/n/search", r'{"query": "tea\ud800"}', "problem", "lone surrogate"),
    ("/v1/brains/n/documents", r'{"content": "a\udc00b"}', "problem", "lone surrogate"),
    (
        "/zengram/memory",
        '{"type":"event","content":"x","source_agent":"a","metadata":' + DEEP + "}",
        "zengram",
        "nested deeper",
    ),
    (
        "/zengram/memory",
        r'{"type":"event","content":"a\ud800","source_agent":"a"}',
        "zengram",
        "lone surrogate (\\ud800)",
    ),
    ("/zengram/export/import", '{"memories": ' + DEEP + "}", "zengram", "nested deeper"),
    ("/mcp", _call("memory_search", '{"query": ' + DEEP + "}"), "jsonrpc", "recursion limit"),
    (
        "/mcp",
        _call("memory_remember", r'{"content": "a\ud800b", "brain": "n"}'),
        "jsonrpc",
        "lone surrogate (\\ud800)",
    ),
    (
        "/mcp/zengram",
        _call("brain_store", r'{"type": "event", "content": "a\ud800b"}'),
        "jsonrpc",
        "lone surrogate",
    ),
    (
        "/mcp/thoughtmcp",
        _call(
            "remember",
            r'{"content": "abcdefghij\udc00", "userId": "u", "sessionId": "s", "primarySector": "semantic"}',
        ),
        "jsonrpc",
        "lone surrogate (\\udc00)",
    ),
]


@pytest.mark.parametrize(("path", "body", "style", "named"), CASES)
def test_unmeant_json_is_a_clear_400_in_the_surfaces_style(
    live: LiveServer, path: str, body: str, style: str, named: str
) -> None:
    before = live.snapshot()
    response = _post(live, path, body)
    answer: Any = response.json()
    assert response.status_code == 400, response.text
    if style == "problem":
        assert response.headers["content-type"].startswith("application/problem+json")
        assert answer["code"] == "validation_error" and named in answer["detail"]
    elif style == "zengram":
        assert set(answer) == {"error"} and named in answer["error"]
    else:
        assert answer["error"]["code"] == -32700 and named in answer["error"]["message"]
    assert live.snapshot() == before  # nothing written
    assert json.dumps(answer).count("\\ud8") <= 1  # the bad escape is named, not echoed back as data


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/brains/n/documents/batch-ops", '{"ops": ["delete notes/a.md"]}'),
        (
            "/mcp/thoughtmcp",
            _call("remember", '{"content": "abcdefghijkl", "userId": "u", "sessionId": "s", '
                  '"primarySector": "semantic", "metadata": "tags"}'),
        ),
        ("/mcp/thoughtmcp", _call("recall", '{"userId": "u", "dateRange": "2026"}')),
    ],
)  # fmt: skip
def test_a_value_that_should_be_an_object_is_named_so_not_by_our_class(
    live: LiveServer, path: str, body: str
) -> None:
    before = live.snapshot()
    response = _post(live, path, body)
    said = response.text

    assert "should be an object" in said, said
    assert "instance of" not in said and "Metadata" not in said and "BatchOp" not in said
    assert live.snapshot() == before
