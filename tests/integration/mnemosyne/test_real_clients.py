"""Mnemosyne has no client of its own; its users reach it with generic MCP clients. The MCP Inspector
CLI (pinned in tests/clients) lists and calls the surface over streamable HTTP, without a
credential (tools/list and get_health; any other tool is a 401 that asks it to sign in) and with a
bearer token, and over stdio."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.integration.mcp.conftest import LiveServer
from tests.integration.mcp.node_clients import CAIRN, CLIENTS, node
from tests.integration.mcp.test_inspector_cli import INSPECTOR, inspector
from tests.integration.mnemosyne.conftest import stock

TOOLS = {"search", "get_chunk", "list_libraries", "list_collections", "list_items", "get_health"}


def test_the_inspector_over_http_with_and_without_a_credential(live: LiveServer) -> None:
    shelf = stock(live.container)
    url = f"{live.base}/mcp/mnemosyne/"
    listed = inspector(url, "--transport", "http", "--method", "tools/list")
    health = inspector(url, "--transport", "http", "--method", "tools/call", "--tool-name", "get_health")
    refused = subprocess.run(
        [node(), INSPECTOR, "--cli", url, "--transport", "http", "--method", "tools/call",
         "--tool-name", "list_libraries"],
        cwd=CLIENTS, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    bearer = ["--header", "Authorization: Bearer sekret-owner-token"]
    found = inspector(
        url, "--transport", "http", *bearer, "--method", "tools/call", "--tool-name", "search",
        "--tool-arg", "query=Netherfield Park", "--tool-arg", f"library_uid={shelf.novels.uid}",
    )  # fmt: skip

    assert {t["name"] for t in listed["tools"]} == TOOLS
    assert health["isError"] is False and health["structuredContent"]["status"] == "ok"
    assert refused.returncode != 0 and "authentication required" in refused.stderr  # a 401: sign in first
    assert found["isError"] is False
    top = json.loads(found["content"][0]["text"])["candidates"][0]
    assert top["item_title"] == "Chapter One" and top["library_type"] == "fiction"


def test_the_inspector_over_stdio(tmp_path: Path) -> None:
    server = [CAIRN, "mcp", "--surface", "mnemosyne", "--data-dir", str(tmp_path / "data")]
    listed = inspector(*server, "--method", "tools/list")
    libraries = inspector(*server, "--method", "tools/call", "--tool-name", "list_libraries")
    assert {t["name"] for t in listed["tools"]} == TOOLS
    assert libraries["isError"] is False and libraries["structuredContent"] == {
        "libraries": [],
        "limit": 50,
        "offset": 0,
    }
