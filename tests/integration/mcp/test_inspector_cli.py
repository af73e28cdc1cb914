"""The MCP Inspector CLI (`mcp-inspector --cli`, pinned in tests/clients) against `cairn mcp` over
stdio and `/mcp` over HTTP: it lists the canonical tools and calls them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.mcp.conftest import LiveServer
from tests.integration.mcp.node_clients import CAIRN, CLIENTS, run_node
from tests.integration.mcp.test_tools_list import SCHEMAS

INSPECTOR = str(CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "cli.js")


def inspector(*args: str) -> dict[str, Any]:
    # Run from inside tests/clients: inspector-cli 1.0.3 picks the package.json holding its own
    # version by testing "../package.json" against the working directory, not its own folder.
    out = run_node([INSPECTOR, "--cli", *args], cwd=CLIENTS / "node_modules")
    reply: dict[str, Any] = json.loads(out)
    return reply


def test_tools_list_and_calls_over_stdio(tmp_path: Path) -> None:
    server = [CAIRN, "mcp", "--data-dir", str(tmp_path / "data")]

    listed = inspector(*server, "--method", "tools/list")
    created = inspector(
        *server,
        "--method",
        "tools/call",
        "--tool-name",
        "memory_create_brain",
        "--tool-arg",
        "name=Inspected",
    )
    brains = inspector(*server, "--method", "tools/call", "--tool-name", "memory_list_brains")

    assert {t["name"] for t in listed["tools"]} == set(SCHEMAS)
    assert created["isError"] is False and created["structuredContent"]["slug"] == "inspected"
    assert brains["isError"] is False
    assert created["structuredContent"]["id"] in [b["id"] for b in brains["structuredContent"]["items"]]


def test_tools_list_over_http(live: LiveServer) -> None:
    listed = inspector(live.url, "--transport", "http", "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == set(SCHEMAS)
