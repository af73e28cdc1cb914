"""One MCP tool call as a single JSON-RPC POST (Cairn's endpoints are stateless streamable HTTP in
JSON mode), for seeding data with plain httpx where an MCP session is not the point."""

from __future__ import annotations

from typing import Any

import httpx

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


def call_tool(http: httpx.Client, path: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's result; AssertionError when the call or the tool failed."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    reply = http.post(path, json=body, headers=HEADERS)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json().get("result") or {}
    assert result and not result.get("isError"), reply.text
    return result
