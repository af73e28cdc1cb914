"""The MCP Inspector CLI (`mcp-inspector --cli`, pinned in tests/clients) against `cairn mcp` over
stdio and `/mcp` over HTTP: it lists the canonical tools and calls them.

The pin is the `@modelcontextprotocol/inspector` package, not `inspector-cli` alone: both read their
own package.json by a path tested against the working directory, which inside an installed
`inspector-cli` finds nothing (`Cannot find module '…/node_modules/@modelcontextprotocol/package.json'`)
unless the directory above the working one holds some package.json. The whole package's copy finds
its own from tests/clients, so it runs there as `npx mcp-inspector --cli` runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.integration.mcp.conftest import LiveServer
from tests.integration.mcp.node_clients import CAIRN, CLIENTS, run_node
from tests.integration.mcp.test_tools_list import SCHEMAS

INSPECTOR = str(CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js")


def inspector(*args: str) -> dict[str, Any]:
    out = run_node([INSPECTOR, "--cli", *args])
    reply: dict[str, Any] = json.loads(out)
    return reply


def test_the_pinned_inspector_runs_under_npx_inside_its_package(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    assert npx is not None, "npx is not on PATH: the MCP client tests need Node.js 20+ and npm"
    server = [CAIRN, "mcp", "--data-dir", str(tmp_path / "data")]
    done = subprocess.run(
        [npx, "--no-install", "mcp-inspector", "--cli", *server, "--method", "tools/list"],
        cwd=CLIENTS, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {t["name"] for t in json.loads(done.stdout)["tools"]} == set(SCHEMAS)


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
